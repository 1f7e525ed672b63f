// The replicas a merge combines: one flat float parameter vector per device, all the same size,
// in host memory or, for a merge that runs on the GPUs, in GPU memory. And the global model they
// merge into, which such a merge keeps on the GPUs.
#pragma once

#include <cstddef>
#include <memory>
#include <vector>

namespace xmlt::merge {

struct ReplicaSet {
  // One per device. Across ranks, another rank's replica is null where the merge is a weighted
  // sum: the rank sum collective reads this rank's replicas only (merge_checks.h).
  std::vector<float*> params;
  size_t size = 0;             // parameters per replica
  // Start offset of each tensor (layer weight or bias) in the flat vector, ascending, the first 0;
  // tensor k spans [tensors[k], tensors[k+1]) or up to `size`. Empty means one tensor. Merges
  // that work per tensor (Adasum) need it; element-wise ones ignore it.
  std::vector<size_t> tensors;
  // Where each replica lives: empty when every one is in host memory, else one GPU ordinal per
  // replica (params then point into that GPU's memory; only the GPU merges read them).
  std::vector<int> gpus = {};
  size_t count() const { return params.size(); }
  bool on_gpus() const { return !gpus.empty(); }
};

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
