// What the CPU collectives share: argument checks and the deterministic sum of squares.
#pragma once

#include <cstddef>
#include <vector>

#include "merge/replica_set.h"

namespace xmlt::merge {

// Throws std::invalid_argument when a replica of a non-empty model has no parameters.
void CheckReplicaPointers(const ReplicaSet& replicas);

// Throws std::invalid_argument unless there is a replica and one weight per replica.
void CheckWeightedArguments(const ReplicaSet& replicas, const std::vector<double>& weights);

// Sum of squares of x[begin, end) in double, over fixed leaves combined in a fixed tree, so the
// result has the same bits whatever the thread count.
double DeterministicSquaredNorm(const float* x, size_t begin, size_t end);

}  // namespace xmlt::merge
