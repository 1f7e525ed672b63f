// The weighted merge skeleton: checks, the merge's weight rule, then the global momentum update
// fused into the collective.
#include "merge/weighted_merger.h"

#include <stdexcept>
#include <utility>

#include "merge/global_momentum.h"
#include "merge/merge_checks.h"

namespace xmlt::merge {
namespace {

class WeightedMerger : public Merger {
 public:
  WeightedMerger(std::string name, const MergeOptions& options,
                 std::shared_ptr<Collective> collective, WeightRule rule)
      : name_(std::move(name)),
        momentum_(options.momentum),
        mode_(options.momentum_mode),
        collective_(std::move(collective)),
        rule_(std::move(rule)) {
    if (!collective_) throw std::invalid_argument(name_ + " merge: no collective");
  }

  MergeOutcome Merge(const ReplicaSet& replicas, const MergeInput& input,
                     GlobalModel* global) override {
    // Across ranks the other ranks' replicas are null here: the rank sum collective reads only
    // this rank's, and every collective checks the pointers it reads.
    CheckReplicasAndGlobal(replicas, global, /*other_ranks=*/true);
    CheckOptionalInput(input, replicas.count(), name_);
    MergeOutcome outcome = rule_(replicas, input, *collective_);
    MergeWithGlobalMomentum(*collective_, replicas, outcome.weights, momentum_, global, mode_);
    return outcome;
  }

  std::string name() const override { return name_; }

 private:
  std::string name_;
  double momentum_;
  MomentumMode mode_;
  std::shared_ptr<Collective> collective_;
  WeightRule rule_;
};

}  // namespace

std::unique_ptr<Merger> MakeWeightedMerger(std::string name, const MergeOptions& options,
                                           std::shared_ptr<Collective> collective,
                                           WeightRule rule) {
  return std::make_unique<WeightedMerger>(std::move(name), options, std::move(collective),
                                          std::move(rule));
}

}  // namespace xmlt::merge
