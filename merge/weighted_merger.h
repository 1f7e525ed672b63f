// The skeleton shared by the merges that give each replica one scalar weight alpha_i and combine
// the replicas under the global momentum rule (normalized, average, gradient): each of them
// supplies only its weights and its name.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "merge/collective.h"
#include "merge/merger.h"
#include "merge/replica_set.h"

namespace xmlt::merge {

// A merge's weights: alpha_i per replica in MergeOutcome::weights (and, for Algorithm 2, the
// perturbation it applied). Called once the replicas, the global model and the input's sizes are
// checked (every input vector empty or one entry per replica) and before anything is written, so
// a rule that throws std::invalid_argument leaves the model and the replicas untouched. It may
// read the replicas through the collective (Algorithm 2's norms).
using WeightRule = std::function<MergeOutcome(const ReplicaSet& replicas, const MergeInput& input,
                                              Collective& collective)>;

// A merger called `name` that checks its arguments, asks `rule` for the weights, then runs
// MergeWithGlobalMomentum with options.momentum and options.momentum_mode on `collective`.
// Throws std::invalid_argument without a collective.
std::unique_ptr<Merger> MakeWeightedMerger(std::string name, const MergeOptions& options,
                                           std::shared_ptr<Collective> collective,
                                           WeightRule rule);

}  // namespace xmlt::merge
