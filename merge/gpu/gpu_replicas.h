// A ReplicaSet on GPUs as the device merges take it.
#pragma once

#include <stdexcept>
#include <vector>

#include "base/replica_params.h"
#include "merge/replica_set.h"

namespace xmlt::merge::gpu {

// The set's replicas; throws std::invalid_argument when they are not all on GPUs (or there are
// none).
inline std::vector<base::ReplicaParams> GpuReplicas(const ReplicaSet& replicas) {
  if (replicas.count() == 0) throw std::invalid_argument("GPU merge: no replicas");
  for (const base::ReplicaParams& r : replicas.members)
    if (!r.on_gpu())
      throw std::invalid_argument("GPU merge: the replicas are not on GPUs (one GPU ordinal per replica needed)");
  return replicas.members;
}

}  // namespace xmlt::merge::gpu
