// How the results of a mega-batch count; see settlement.h.
#include "scheduler/settlement.h"

#include <algorithm>

#include "engine/device_spec.h"
#include "scheduler/fault_text.h"

namespace xmlt::scheduler {

// A failed device's replica, and with it even its successful steps of the mega-batch, is lost.
void Settle(DevicePool& pool, const std::vector<Assignment>& plan, const std::vector<engine::BatchResult>& results,
            MegaBatchRun* out) {
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

}  // namespace xmlt::scheduler
