// Elastic SGD's merge: the plain average of the replicas under the global momentum rule. Only the
// weights are here; the rest is the weighted merge skeleton.
#include <utility>

#include "merge/merger.h"
#include "merge/weighted_merger.h"

namespace xmlt::merge {
namespace {

// alpha_i = 1/n; the input is not used.
MergeOutcome AverageWeights(const ReplicaSet& replicas, const MergeInput&, Collective&) {
  MergeOutcome outcome;
  outcome.weights.assign(replicas.count(), 1.0 / static_cast<double>(replicas.count()));
  return outcome;
}

}  // namespace

std::unique_ptr<Merger> MakeAverageMerger(const MergeOptions& options,
                                          std::shared_ptr<Collective> collective) {
  return MakeWeightedMerger("average", options, std::move(collective), AverageWeights);
}

}  // namespace xmlt::merge
