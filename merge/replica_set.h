// The replicas a merge combines: one flat float parameter vector per device, all the same size.
// On the CPU backend these point into host memory owned by the devices' replicas.
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
  size_t count() const { return params.size(); }
};

// The global model of model-averaging SGD and its previous value (for the momentum term).
struct GlobalModel {
  std::vector<float> current;   // w
  std::vector<float> previous;  // w_p; equal to `current` at the start, so the first momentum term is 0
};

}  // namespace xmlt::merge
