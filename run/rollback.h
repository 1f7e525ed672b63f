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

// The rollback target, and the state to trust next. At most two copies of w: the trusted state's,
// and the latest state's, which it may lend from the global model instead (TrustNow's `lend_w`).
class TrustedStates {
 public:
  // `now` is trusted as it is (the run's start, or right after a rollback) and is the latest state
  // too. With `lend_w` the latest state keeps no copy of w: until the next merge it is the global
  // model's, and that merge trusts it by taking w's buffer (TrustLatestAtMerge).
  void TrustNow(SavedState now, bool lend_w) {
    lends_w_ = lend_w;
    latest_ = lend_w ? SavedState{now.pool, {}, now.progress, now.open} : now;
    trusted_ = std::move(now);
  }
  // The mega-batch after the latest state was sound: trust it (unless its merge did). The trusted
  // state's w is released first, so that the next Keep never holds three copies at once. A lent w
  // is copied from `w`.
  void TrustLatest(const std::vector<float>& w) {
    if (!latest_) return;
    trusted_.reset();
    if (lends_w_) latest_->global = w;
    trusted_ = std::move(latest_);
    latest_.reset();
  }
  // Before a merge that overwrites w, the global model's (`*w`), with a copy of the one replica,
  // once the mega-batch is known sound: the latest state, which lends w, is trusted by taking w's
  // buffer, and w gets the old trusted state's buffer for the merge to overwrite. No copy is made.
  void TrustLatestAtMerge(std::vector<float>* w) {
    if (!latest_) return;  // trusted already
    latest_->global.swap(*w);
    w->swap(trusted_->global);
    trusted_ = std::move(latest_);
    latest_.reset();
  }
  // The state to trust next (without w where it is lent).
  void Keep(SavedState now) { latest_ = std::move(now); }
  const SavedState& trusted() const { return *trusted_; }
  bool lends_w() const { return lends_w_; }
  // The run is over: both copies go.
  void Clear() {
    trusted_.reset();
    latest_.reset();
  }

 private:
  std::optional<SavedState> trusted_, latest_;
  bool lends_w_ = false;
};

}  // namespace xmlt::run
