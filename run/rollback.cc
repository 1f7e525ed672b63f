// Divergence rollbacks; see rollback.h.
#include "run/rollback.h"

#include <algorithm>

namespace xmlt::run {

PoolSnapshot TakeSnapshot(const scheduler::DevicePool& pool) {
  return PoolSnapshot{pool.rows().sampler(), pool.states(), pool.rows().returned(), pool.row_cost_s(),
                      pool.planner()};
}

void RollBack(scheduler::DevicePool& pool, const PoolSnapshot& snapshot, const std::vector<float>& model) {
  pool.rows().sampler() = snapshot.sampler;
  pool.rows().returned() = snapshot.returned;
  pool.row_cost_s() = snapshot.row_cost_s;
  pool.planner() = snapshot.planner;
  for (size_t i = 0; i < pool.size(); ++i) pool.states()[i] = {snapshot.states[i].batch, snapshot.states[i].lr * 0.5};
  for (size_t i : pool.alive()) {
    if (!pool.local(i)) continue;  // another rank's device: its owner rolls it back
    engine::Device& d = pool.device(i);
    d.LoadParams(model.data(), model.size());
    d.FinishMerge();
    d.RestoreOptimizerState({});
  }
}

}  // namespace xmlt::run
