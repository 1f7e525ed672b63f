// A ReplicaSet on GPUs as the device merges take it.
#pragma once

#include <stdexcept>
#include <vector>

#include "merge/gpu/device_collective.h"
#include "merge/replica_set.h"

namespace xmlt::merge {

// One GpuReplica per replica; throws std::invalid_argument when the set is not on GPUs (or has
// no replicas).
inline std::vector<gpu::GpuReplica> GpuReplicas(const ReplicaSet& replicas) {
  if (replicas.count() == 0) throw std::invalid_argument("GPU merge: no replicas");
  if (replicas.gpus.size() != replicas.count())
    throw std::invalid_argument("GPU merge: the replicas are not on GPUs (one GPU ordinal per replica needed)");
  std::vector<gpu::GpuReplica> on_gpus;
  for (size_t i = 0; i < replicas.count(); ++i) on_gpus.push_back({replicas.gpus[i], replicas.params[i]});
  return on_gpus;
}

}  // namespace xmlt::merge
