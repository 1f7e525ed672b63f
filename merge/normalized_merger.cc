// Algorithm 2 of the Adaptive SGD paper: weights normalized by batch size or by update count,
// perturbed towards the most updated replica when every replica is regularized. Only the weights
// are here; the rest (checks, the global momentum update) is the weighted merge skeleton.
#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <tuple>
#include <utility>
#include <vector>

#include "merge/merger.h"
#include "merge/weighted_merger.h"

namespace xmlt::merge {
namespace {

// alpha_i = b_i / sum b when every u_i is equal, else u_i / sum u.
std::vector<double> NormalizedWeights(const MergeInput& input) {
  const size_t n = input.updates.size();
  bool equal_updates = true;
  for (size_t i = 1; i < n; ++i)
    equal_updates = equal_updates && input.updates[i] == input.updates[0];
  std::vector<double> weights(n);
  if (equal_updates) {
    double total = 0.0;
    for (double b : input.batch) {
      if (!(b >= 0.0) || !std::isfinite(b))
        throw std::invalid_argument("normalized merge: batch sizes must be finite and >= 0");
      total += b;
    }
    if (!(total > 0.0)) throw std::invalid_argument("normalized merge: batch sizes sum to 0");
    for (size_t i = 0; i < n; ++i) weights[i] = input.batch[i] / total;
  } else {
    // Unequal counts of unsigned values: their sum is positive.
    double total = 0.0;
    for (uint64_t u : input.updates) total += static_cast<double>(u);
    for (size_t i = 0; i < n; ++i) weights[i] = static_cast<double>(input.updates[i]) / total;
  }
  return weights;
}

// r and s under the tie rule of merger.h: the greatest and least replica by (u_i, b_i, -i).
std::pair<size_t, size_t> MostAndLeastUpdated(const MergeInput& input) {
  auto key = [&](size_t i) {
    return std::make_tuple(input.updates[i], input.batch[i], -static_cast<long long>(i));
  };
  size_t r = 0, s = 0;
  for (size_t i = 1; i < input.updates.size(); ++i) {
    if (key(i) > key(r)) r = i;
    if (key(i) < key(s)) s = i;
  }
  return {r, s};
}

// The normalized weights, perturbed (alpha_r *= 1 + delta, alpha_s *= 1 - delta, then divided by
// their sum when asked) when every replica took a step and is regularized.
MergeOutcome Algorithm2Weights(const MergeOptions& options, const ReplicaSet& replicas,
                               const MergeInput& input, Collective& collective) {
  // Algorithm 2 weighs by both; the skeleton only checked that each is empty or full.
  if (input.batch.empty() || input.updates.empty()) {
    throw std::invalid_argument("normalized merge: needs a batch size and an update count per "
                                "replica");
  }
  MergeOutcome outcome;
  outcome.weights = NormalizedWeights(input);

  const auto [r, s] = MostAndLeastUpdated(input);
  // A replica that took no step (a mega-batch the run's end cut short, or a device too slow
  // for one batch) is the previous global model, not a slow learner to pull away from; with
  // alpha_s = 0 the perturbation would only scale the model by 1 + delta * alpha_r.
  if (r != s && input.updates[s] > 0) {
    const std::vector<double> squared = collective.SquaredNorms(replicas);
    // sqrt(q) < thr * size rather than sqrt(q) / size < thr: same test, and an empty model
    // (size 0, ratio undefined) is not considered regularized.
    const double limit = options.pert_threshold * static_cast<double>(replicas.size);
    bool regularized = true;
    for (double q : squared) regularized = regularized && std::sqrt(q) < limit;
    if (regularized) {
      outcome.weights[r] *= 1.0 + options.pert_delta;
      outcome.weights[s] *= 1.0 - options.pert_delta;
      if (options.renormalize_perturbed) {
        double total = 0.0;
        for (double a : outcome.weights) total += a;
        for (double& a : outcome.weights) a /= total;
      }
      outcome.perturbed = true;
      outcome.most_updated = static_cast<int>(r);
      outcome.least_updated = static_cast<int>(s);
    }
  }
  return outcome;
}

}  // namespace

std::unique_ptr<Merger> MakeNormalizedMerger(const MergeOptions& options,
                                             std::shared_ptr<Collective> collective) {
  return MakeWeightedMerger(
      "normalized", options, std::move(collective),
      [options](const ReplicaSet& replicas, const MergeInput& input, Collective& c) {
        return Algorithm2Weights(options, replicas, input, c);
      });
}

}  // namespace xmlt::merge
