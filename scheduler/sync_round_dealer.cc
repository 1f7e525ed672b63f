// Dealing in synchronous rounds (sync, crossbow): each round --batch rows (fewer at an epoch's end
// or at the rows the run has left) split evenly over the surviving devices, submitted whole, every
// result awaited, and the replicas merged after every round. See dealer.h.
#include <algorithm>
#include <chrono>

#include "scheduler/dealer.h"
#include "scheduler/result_tally.h"

namespace xmlt::scheduler {
namespace {

// Adds a synchronous round's statistics to the mega-batch it belongs to.
void AddRound(const MegaBatchRun& round, MegaBatchRun* run) {
  for (size_t i = 0; i < round.updates.size(); ++i) {
    run->updates[i] += round.updates[i];
    run->rows_of[i] += round.rows_of[i];
    run->loss_of[i] += round.loss_of[i];
    run->busy_s[i] += round.busy_s[i];
  }
  run->span_s += round.span_s;
  run->batches += round.batches;
  run->rows += round.rows;
  if (run->diverged_on.empty()) run->diverged_on = round.diverged_on, run->divergence = round.divergence;
}

class SyncRoundDealer : public Dealer {
 public:
  explicit SyncRoundDealer(DevicePool& pool) : pool_(pool) {}

  bool MergesEachRound() const override { return true; }

  // Rounds until the budget is dealt; a round counts the rows its surviving devices trained.
  Dealt Deal(const DealRequest& request, MegaBatchRun* run) override {
    Dealt dealt;
    while (dealt.rows < request.budget && !pool_.alive().empty()) {
      if (request.stop != nullptr && request.stop->load() != 0) {
        dealt.stopped = true;
        break;
      }
      const MegaBatchRun round = RunRound(request.cap - dealt.rows);
      dealt.rows += round.rows;
      request.merge_round(round);
      AddRound(round, run);
    }
    return dealt;
  }

 private:
  MegaBatchRun RunRound(uint64_t cap) {
    pool_.planner().ClearWork();  // each round is timed on its own
    const size_t taken = pool_.rows().Take(std::min<uint64_t>(pool_.options().batch, cap), 0);
    // A round cut short at an epoch's or the run's end steps at its share of the rate, as a batch.
    const double rate_share = double(taken) / double(pool_.options().batch);
    std::vector<Assignment> plan;
    size_t offset = 0;
    for (const auto& [device, count] : DispatchPlanner::SplitRound(taken, pool_.alive())) {
      plan.push_back(Assignment{device, offset, size_t(count), pool_.planner().DrawSlowdown(device), rate_share});
      offset += count;
    }
    MegaBatchRun run = pool_.EmptyRun();
    const std::chrono::steady_clock::time_point start = std::chrono::steady_clock::now();
    size_t submitted = 0;
    for (size_t k = 0; k < plan.size(); ++k) {
      engine::BatchTask task = pool_.TaskFor(plan[k], k);
      if (pool_.local(plan[k].device)) pool_.Submit(plan[k].device, std::move(task)), ++submitted;
    }
    std::vector<engine::BatchResult> results(plan.size());
    for (size_t k = 0; k < submitted; ++k) {
      const engine::BatchResult result = pool_.Collect();
      results[result.id] = result;
    }
    pool_.ShareResults(plan, &results);
    Conclude(pool_, plan, results, start, &run);
    return run;
  }

  DevicePool& pool_;
};

}  // namespace

std::unique_ptr<Dealer> MakeSyncRoundDealer(DevicePool& pool) { return std::make_unique<SyncRoundDealer>(pool); }

}  // namespace xmlt::scheduler
