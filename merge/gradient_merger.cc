// Synchronous gradient aggregation: each replica took one plain SGD step from the same w, so their
// average is the averaged gradient applied once. Only the weights are here; the rest (checks, the
// global momentum on top) is the weighted merge skeleton.
#include <stdexcept>
#include <string>
#include <utility>

#include "merge/merger.h"
#include "merge/weighted_merger.h"

namespace xmlt::merge {
namespace {

// alpha_i = 1/n, or u_i / sum u when the update counts are given.
MergeOutcome GradientWeights(const ReplicaSet& replicas, const MergeInput& input, Collective&) {
  const size_t n = replicas.count();
  // mean(w_i) = w - lr mean(g_i) only holds for exactly one step per replica, which the sync
  // schedule guarantees (one batch per device per round). A round with fewer rows than devices
  // leaves some out (u_i = 0): the mean is then over the devices that took a step.
  size_t stepped = 0;
  for (size_t i = 0; i < input.updates.size(); ++i) {
    if (input.updates[i] > 1) {
      throw std::invalid_argument("gradient merge: replica " + std::to_string(i) + " made " +
                                  std::to_string(input.updates[i]) +
                                  " updates since the last merge; gradient aggregation needs "
                                  "at most one per replica (sync schedule)");
    }
    stepped += input.updates[i];
  }
  if (!input.updates.empty() && stepped == 0)
    throw std::invalid_argument("gradient merge: no replica took a step");
  MergeOutcome outcome;
  outcome.weights.assign(n, 1.0 / static_cast<double>(n));
  if (!input.updates.empty())
    for (size_t i = 0; i < n; ++i) outcome.weights[i] = double(input.updates[i]) / double(stepped);
  return outcome;
}

}  // namespace

std::unique_ptr<Merger> MakeGradientMerger(const MergeOptions& options,
                                           std::shared_ptr<Collective> collective) {
  return MakeWeightedMerger("gradient", options, std::move(collective), GradientWeights);
}

}  // namespace xmlt::merge
