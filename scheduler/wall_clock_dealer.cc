// Dealing on the wall clock, dynamic, in one process: every device starts with a batch; each
// result frees its device for the next one, so faster devices take more batches. A failed device
// gets nothing more. See dealer.h.
#include <chrono>

#include "scheduler/dealer.h"
#include "scheduler/result_tally.h"

namespace xmlt::scheduler {
namespace {

using Clock = std::chrono::steady_clock;

class WallClockDealer : public Dealer {
 public:
  explicit WallClockDealer(DevicePool& pool) : pool_(pool) {}

  Dealt Deal(const DealRequest& request, MegaBatchRun* run) override {
    if (!request.continues) pool_.planner().BeginMegaBatch();
    const Clock::time_point start = Clock::now();
    std::vector<Assignment> plan;
    size_t used = 0;
    uint64_t cap = request.cap;
    Dealt dealt;
    const std::vector<engine::BatchResult> results =
        DealAsDevicesReturn(pool_, pool_.alive(), [&](size_t i, uint64_t id) {
          if (dealt.rows >= request.budget || cap == 0) return false;
          if (request.stop != nullptr && request.stop->load() != 0) {
            dealt.stopped = true;
            return false;
          }
          plan.push_back(pool_.Assign(i, RowsForBatch(pool_.states()[i].batch), &used, &cap));
          dealt.rows += plan.back().count;
          pool_.Submit(i, pool_.TaskFor(plan.back(), id));
          return true;
        });
    dealt.stopped = dealt.stopped && dealt.rows < request.budget && cap > 0;
    TallyResults(pool_, plan, results, run);
    for (size_t k = 0; k < plan.size(); ++k)
      if (!pool_.dropped(plan[k].device)) run->busy_s[plan[k].device] += results[k].busy_s;
    run->span_s += std::chrono::duration<double>(Clock::now() - start).count();
    return dealt;
  }

 private:
  DevicePool& pool_;
};

}  // namespace

std::unique_ptr<Dealer> MakeWallClockDealer(DevicePool& pool) { return std::make_unique<WallClockDealer>(pool); }

}  // namespace xmlt::scheduler
