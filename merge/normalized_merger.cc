// Algorithm 2 of the Adaptive SGD paper: weights normalized by batch size or by update count,
// perturbed towards the most updated replica when every replica is regularized, then the global
// momentum update fused into the collective.
#include <cmath>
#include <stdexcept>
#include <string>
#include <tuple>

#include "merge/global_momentum.h"
#include "merge/merger.h"

namespace xmlt::merge {
namespace {

void CheckInputSize(const char* what, size_t got, size_t replicas, bool may_be_empty) {
  if (got == replicas || (may_be_empty && got == 0)) return;
  throw std::invalid_argument(std::string("normalized merge: ") + what + " has " +
                              std::to_string(got) + " entries for " + std::to_string(replicas) +
                              " replicas");
}

class NormalizedMerger : public Merger {
 public:
  NormalizedMerger(const MergeOptions& options, std::shared_ptr<Collective> collective)
      : options_(options), collective_(std::move(collective)) {
    if (!collective_) throw std::invalid_argument("normalized merge: no collective");
  }

  MergeOutcome Merge(const ReplicaSet& replicas, const MergeInput& input,
                     GlobalModel* global) override {
    CheckReplicasAndGlobal(replicas, global);
    const size_t n = replicas.count();
    CheckInputSize("batch", input.batch.size(), n, false);
    CheckInputSize("updates", input.updates.size(), n, false);
    CheckInputSize("lr", input.lr.size(), n, true);

    MergeOutcome outcome;
    outcome.weights = NormalizedWeights(input);

    const auto [r, s] = MostAndLeastUpdated(input);
    // A replica that took no step (a mega-batch the run's end cut short, or a device too slow
    // for one batch) is the previous global model, not a slow learner to pull away from; with
    // alpha_s = 0 the perturbation would only scale the model by 1 + delta * alpha_r.
    if (r != s && input.updates[s] > 0) {
      const std::vector<double> squared = collective_->SquaredNorms(replicas);
      // sqrt(q) < thr * size rather than sqrt(q) / size < thr: same test, and an empty model
      // (size 0, ratio undefined) is not considered regularized.
      const double limit = options_.pert_threshold * static_cast<double>(replicas.size);
      bool regularized = true;
      for (double q : squared) regularized = regularized && std::sqrt(q) < limit;
      if (regularized) {
        outcome.weights[r] *= 1.0 + options_.pert_delta;
        outcome.weights[s] *= 1.0 - options_.pert_delta;
        if (options_.renormalize_perturbed) {
          double total = 0.0;
          for (double a : outcome.weights) total += a;
          for (double& a : outcome.weights) a /= total;
        }
        outcome.perturbed = true;
        outcome.most_updated = static_cast<int>(r);
        outcome.least_updated = static_cast<int>(s);
      }
    }
    MergeWithGlobalMomentum(*collective_, replicas, outcome.weights, options_.momentum, global,
                            options_.momentum_mode);
    return outcome;
  }

  std::string name() const override { return "normalized"; }

 private:
  static std::vector<double> NormalizedWeights(const MergeInput& input) {
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
  static std::pair<size_t, size_t> MostAndLeastUpdated(const MergeInput& input) {
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

  MergeOptions options_;
  std::shared_ptr<Collective> collective_;
};

}  // namespace

std::unique_ptr<Merger> MakeNormalizedMerger(const MergeOptions& options,
                                             std::shared_ptr<Collective> collective) {
  return std::make_unique<NormalizedMerger>(options, std::move(collective));
}

}  // namespace xmlt::merge
