// Divergence rollbacks: the state of a run at a good point, and the way back to it. A state is
// trusted once the mega-batch after it was sound: a divergence is seen only when a loss crosses the
// limit, and the mega-batch before may already have merged steps on the way up into a finite
// model. The state where the run starts (or resumes) is trusted as it is.
#pragma once

#include <optional>
#include <vector>

#include "run/mega_batch_work.h"
#include "run/run_progress.h"
#include "scheduler/device_pool.h"

namespace xmlt::run {

// The pool's part: what dealing has used up (the rows, the plan) and the devices' settings.
struct PoolSnapshot {
  scheduler::EpochSampler sampler;
  std::vector<scheduler::BatchSizeAndLr> states;
  std::vector<uint64_t> returned;
  double row_cost_s;
  scheduler::DispatchPlanner planner;
};
PoolSnapshot TakeSnapshot(const scheduler::DevicePool& pool);
// Back to `snapshot` with every surviving replica reset to `model`, its momentum zeroed and its
// learning rate halved.
void RollBack(scheduler::DevicePool& pool, const PoolSnapshot& snapshot, const std::vector<float>& model);

struct SavedState {
  PoolSnapshot pool;
  std::vector<float> global;  // w; w_p is not kept: a rollback clears the momentum
  RunProgress progress;
  MegaBatchWork open;
};

// The rollback target, and the state to trust next.
class TrustedStates {
 public:
  // `now` is trusted as it is (the run's start, or right after a rollback).
  void TrustNow(SavedState now) {
    latest_ = std::move(now);
    trusted_ = latest_;
  }
  // The mega-batch after the latest state was sound: trust it, and keep `now` as the next.
  void AfterSoundMegaBatch(SavedState now) {
    trusted_ = std::move(latest_);
    latest_ = std::move(now);
  }
  const SavedState& trusted() const { return *trusted_; }

 private:
  std::optional<SavedState> trusted_, latest_;
};

}  // namespace xmlt::run
