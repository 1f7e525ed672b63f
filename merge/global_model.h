// The global model a merge combines the replicas into (w), its previous value (w_p) and how the
// global momentum between them acts; a merge that runs on the GPUs keeps w and w_p there.
#pragma once

#include <memory>
#include <vector>

namespace xmlt::merge {

// How the global momentum acts (DANA's look-ahead reasoning applied to model averaging):
//  - kHeavy: replicas start each mega-batch from w; w' = combine(replicas) + gamma (w - w_p).
//  - kNesterov: replicas start from the estimated future position w + gamma (w - w_p), so their
//    gradients are taken where the model is heading; w' = combine(replicas), whose starting point
//    already carries the momentum step. The global model w itself (what is evaluated and saved) is
//    never the look-ahead point.
enum class MomentumMode { kHeavy, kNesterov };

// w and w_p as a merge on the GPUs keeps them (merge/gpu/).
class GlobalModelOnGpus {
 public:
  virtual ~GlobalModelOnGpus() = default;
  virtual void Fetch(float* current, float* previous) = 0;  // both into host memory
  virtual bool CurrentFinite() = 0;                         // counted on the GPUs
};

// The global model of model-averaging SGD and its previous value (for the momentum term). The host
// vectors are the model, except after a merge on the GPUs: that merge keeps w and w_p there and
// the host vectors are stale until SyncToHost() copies them back, which evaluations, checkpoints
// and the rollback target do, when they need them. Whoever writes the host vectors (a resume, a
// rollback) calls HostWritten(), and the next merge on the GPUs starts from them.
struct GlobalModel {
  std::vector<float> current;   // w
  std::vector<float> previous;  // w_p; equal to `current` at the start, so the first momentum term is 0
  std::shared_ptr<GlobalModelOnGpus> on_gpus = nullptr;  // set by a merge on the GPUs
  bool host_stale = false;                     // on_gpus holds a newer w and w_p

  void SyncToHost() {
    if (!host_stale) return;
    on_gpus->Fetch(current.data(), previous.data());
    host_stale = false;
  }
  void HostWritten() {
    on_gpus.reset();
    host_stale = false;
  }
  // Every value of w finite, checked where w is newest.
  bool CurrentFinite() const;
};

}  // namespace xmlt::merge
