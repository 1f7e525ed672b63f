// The replicas a merge combines: one flat float parameter vector per device, all the same size,
// in host memory or, for a merge that runs on the GPUs, in GPU memory. The global model they merge
// into is in global_model.h.
#pragma once

#include <cstddef>
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

}  // namespace xmlt::merge
