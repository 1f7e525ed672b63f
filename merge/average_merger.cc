// Elastic SGD's merge: the plain average of the replicas under the global momentum rule.
#include <stdexcept>
#include <string>

#include "merge/global_momentum.h"
#include "merge/merger.h"

namespace xmlt::merge {
namespace {

class AverageMerger : public Merger {
 public:
  AverageMerger(const MergeOptions& options, std::shared_ptr<Collective> collective)
      : options_(options), collective_(std::move(collective)) {
    if (!collective_) throw std::invalid_argument("average merge: no collective");
  }

  MergeOutcome Merge(const ReplicaSet& replicas, const MergeInput& input,
                     GlobalModel* global) override {
    CheckReplicasAndGlobal(replicas, global);
    const size_t n = replicas.count();
    CheckOptionalInput(input, n, "average");
    MergeOutcome outcome;
    outcome.weights.assign(n, 1.0 / static_cast<double>(n));
    MergeWithGlobalMomentum(*collective_, replicas, outcome.weights, options_.momentum, global,
                            options_.momentum_mode);
    return outcome;
  }

  std::string name() const override { return "average"; }

 private:
  MergeOptions options_;
  std::shared_ptr<Collective> collective_;
};

}  // namespace

std::unique_ptr<Merger> MakeAverageMerger(const MergeOptions& options,
                                          std::shared_ptr<Collective> collective) {
  return std::make_unique<AverageMerger>(options, std::move(collective));
}

}  // namespace xmlt::merge
