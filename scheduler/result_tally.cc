// How the results of a mega-batch count; see result_tally.h.
#include "scheduler/result_tally.h"

#include <algorithm>
#include <chrono>

#include "engine/device_spec.h"
#include "scheduler/fault_text.h"
#include "scheduler/rank_exchange.h"

namespace xmlt::scheduler {
namespace {

// Virtual clock: a device is busy for its rows x slowdown x the row cost, the mega-batch (or round)
// for as long as its busiest device.
void TimeOnTheVirtualClock(DevicePool& pool, const std::vector<Assignment>& plan,
                           const std::vector<engine::BatchResult>& results, uint64_t rows_before, MegaBatchRun* run) {
  double compute_s = 0;
  for (size_t k = 0; k < plan.size(); ++k) {
    if (pool.dropped(plan[k].device)) continue;
    compute_s += results[k].compute_s;
    pool.planner().AddWork(plan[k].device, plan[k].count, plan[k].slowdown);
  }
  // The row cost is calibrated once, on the first mega-batch with work done, unless it was given.
  double& row_cost_s = pool.row_cost_s();
  if (row_cost_s == 0 && run->rows > rows_before)
    row_cost_s = pool.scheduling().row_cost_s > 0 ? pool.scheduling().row_cost_s : compute_s / double(run->rows - rows_before);
  for (size_t i = 0; i < pool.size(); ++i) run->busy_s[i] = pool.planner().Work(i) * row_cost_s;
  run->span_s = *std::max_element(run->busy_s.begin(), run->busy_s.end());
}

}  // namespace

// A failed device's replica, and with it even its successful steps of the mega-batch, is lost.
void TallyResults(DevicePool& pool, const std::vector<Assignment>& plan,
                  const std::vector<engine::BatchResult>& results, MegaBatchRun* out) {
  for (const engine::BatchResult& result : results) {
    if (!result.error || pool.dropped(result.device)) continue;
    pool.Drop(result.device, FaultText(result.error));
    if (result.context_lost) DropContextSharers(pool, result.device);
  }
  MegaBatchRun& run = *out;
  for (size_t k = 0; k < plan.size(); ++k) {
    const Assignment& a = plan[k];
    const engine::BatchResult& result = results[k];
    if (pool.dropped(a.device)) {
      pool.rows().Return(a.offset, a.offset + a.count);
      continue;
    }
    const double mean_loss = result.loss_sum / std::max<uint32_t>(result.labeled_rows, 1);
    if (run.diverged_on.empty()) {
      const std::string what = pool.loss_watch().Check(mean_loss);
      if (!what.empty()) run.diverged_on = pool.device(a.device).spec().id, run.divergence = what;
    }
    // Per device: a worker's results arrive in its own order, whatever the other workers do.
    run.loss_of[a.device] += mean_loss;
    run.rows += result.count;
    run.rows_of[a.device] += result.count;
    ++run.updates[a.device];
    ++run.batches;
  }
}

// Their next call would fail the same way, and their replicas live in the lost memory.
void DropContextSharers(DevicePool& pool, size_t failed) {
  const engine::DeviceSpec& spec = pool.device(failed).spec();
  for (size_t j = 0; j < pool.size(); ++j) {
    if (j == failed || pool.dropped(j)) continue;
    const engine::DeviceSpec& other = pool.device(j).spec();
    if (engine::SharesContext(spec, pool.owner(failed), other, pool.owner(j)))
      pool.Drop(j, "lost with " + spec.id + ", whose GPU context is gone: " + pool.fault(failed));
  }
}

void Conclude(DevicePool& pool, const std::vector<Assignment>& plan, const std::vector<engine::BatchResult>& results,
              std::chrono::steady_clock::time_point start, MegaBatchRun* run) {
  const uint64_t rows_before = run->rows;
  TallyResults(pool, plan, results, run);
  const SchedulerOptions& scheduling = pool.scheduling();
  if (scheduling.clock == SchedulerOptions::Clock::kWall) {
    // Across ranks, the slowest rank's time: every rank books the same.
    const double span = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    run->span_s += pool.ranks() != nullptr ? AgreeOnMax(*pool.ranks(), span) : span;
  } else {
    TimeOnTheVirtualClock(pool, plan, results, rows_before, run);
  }
}

}  // namespace xmlt::scheduler
