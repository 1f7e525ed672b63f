// What the CPU collectives share: argument checks (their blocks and norms: replica_blocks.h).
#pragma once

#include <cstddef>
#include <vector>

#include "merge/replica_set.h"

namespace xmlt::merge {

// Throws std::invalid_argument when a replica of a non-empty model has no parameters, or when some
// replicas are in bf16 and others not.
void CheckReplicaPointers(const ReplicaSet& replicas);


// Throws std::invalid_argument unless there is a replica and one weight per replica.
void CheckWeightedArguments(const ReplicaSet& replicas, const std::vector<double>& weights);

}  // namespace xmlt::merge
