// The replicas a merge combines: one flat float parameter vector per device, all the same size,
// in host memory or, for a merge that runs on the GPUs, in GPU memory. The global model they merge
// into is in global_model.h.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "base/replica_params.h"

namespace xmlt::merge {

struct ReplicaSet {
  // One per device: all in host memory (gpu -1), or all on GPUs (params then point into that GPU's
  // memory; only the GPU merges read them). Across ranks, another rank's replica has null params
  // where the merge is a weighted sum: the rank sum collective reads this rank's replicas only
  // (merge_checks.h); on GPUs its gpu still places it among NCCL's ranks.
  std::vector<base::ReplicaParams> members;
  size_t size = 0;             // parameters per replica
  // Start offset of each tensor (layer weight or bias) in the flat vector, ascending, the first 0;
  // tensor k spans [tensors[k], tensors[k+1]) or up to `size`. Empty means one tensor. Merges
  // that work per tensor (Adasum) need it; element-wise ones ignore it.
  std::vector<size_t> tensors;
  // Replicas kept in bf16 (every member's bf16 set, none's params): a merge reads them widened. The
  // merges that give every replica one start write it rounded to nearest (merge/replica_blocks.h);
  // the elastic force, whose replicas keep their own states, rounds each stochastically with the
  // noise of (this key, the value's offset), which the caller draws anew for each merge
  // (run/survivor_merge.h).
  uint32_t bf16_rounding_key = 0;
  // Set where every replica of the run keeps bf16 weights, this rank's and the other ranks': a
  // hierarchical merge across ranks leaves the others' members null, and the finish must still
  // know, even on a rank whose own devices have all dropped. A member's bf16 says it too.
  bool weights_in_bf16 = false;
  // The rank sum's partial sums of bf16 replicas: a collective hands its finish the weighted sums
  // and writes nothing back into the replicas (merge/replica_blocks.h). bf16 sets only: the tree
  // sums fp32 replicas in their own memory.
  bool sums_only = false;
  size_t count() const { return members.size(); }
  bool in_bf16() const {
    return weights_in_bf16 ||
           std::any_of(members.begin(), members.end(), [](const base::ReplicaParams& r) { return r.in_bf16(); });
  }
  // Any replica on a GPU: the host merges refuse the set (the GPU merges need every one there).
  bool on_gpus() const {
    return std::any_of(members.begin(), members.end(), [](const base::ReplicaParams& r) { return r.on_gpu(); });
  }
};

}  // namespace xmlt::merge
