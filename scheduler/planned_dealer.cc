// Dealing by the dispatch plan (dispatch_planner.h): dynamic on the virtual clock, the device whose
// simulated clock is earliest; static, round robin. See dealer.h.
#include <chrono>

#include "scheduler/dealer.h"
#include "scheduler/result_tally.h"

namespace xmlt::scheduler {
namespace {

class PlannedDealer : public Dealer {
 public:
  explicit PlannedDealer(DevicePool& pool) : pool_(pool) {}

  // Deals the plan one batch at a time, each when its device has fewer than kQueued batches
  // waiting, then waits for every result (so no worker still reads rows that the next mega-batch
  // overwrites).
  Dealt Deal(const DealRequest& request, MegaBatchRun* run) override {
    constexpr uint32_t kQueued = 2;  // one running, one waiting: the device never idles for the coordinator
    DispatchPlanner& planner = pool_.planner();
    if (!request.continues) planner.BeginMegaBatch();
    const bool dynamic = pool_.scheduling().schedule == SchedulerOptions::Schedule::kDynamic;
    const std::chrono::steady_clock::time_point start = std::chrono::steady_clock::now();
    const std::vector<size_t> devices = pool_.alive();
    std::vector<Assignment> plan;
    std::vector<engine::BatchResult> results;
    std::vector<uint32_t> queued(pool_.size(), 0);
    size_t used = 0, outstanding = 0;
    uint64_t cap = request.cap;
    auto collect = [&] {
      const engine::BatchResult result = pool_.Collect();
      results[result.id] = result;
      --queued[result.device];
      --outstanding;
    };
    Dealt dealt;
    while (dealt.rows < request.budget && cap > 0) {
      if (request.stop != nullptr && request.stop->load() != 0) {
        dealt.stopped = true;
        break;
      }
      const std::optional<size_t> next = planner.NextDevice(devices);
      if (!next) break;
      const size_t device = *next;
      if (queued[device] >= kQueued) {
        collect();
        continue;  // and look at the stop flag again before dealing more
      }
      const size_t want = dynamic ? RowsForBatch(pool_.states()[device].batch) : pool_.options().batch;
      plan.push_back(pool_.Assign(device, want, &used, &cap));
      dealt.rows += plan.back().count;
      planner.Dealt(device, plan.back().count, plan.back().slowdown);
      results.emplace_back();
      // Every rank makes every task; a device's owner trains it, and the others learn its result
      // in ShareResults.
      engine::BatchTask task = pool_.TaskFor(plan.back(), plan.size() - 1);
      if (!pool_.local(device)) continue;
      pool_.Submit(device, std::move(task));
      ++queued[device];
      ++outstanding;
    }
    while (outstanding > 0) collect();
    pool_.ShareResults(plan, &results);
    Conclude(pool_, plan, results, start, run);
    return dealt;
  }

 private:
  DevicePool& pool_;
};

}  // namespace

std::unique_ptr<Dealer> MakePlannedDealer(DevicePool& pool) { return std::make_unique<PlannedDealer>(pool); }

}  // namespace xmlt::scheduler
