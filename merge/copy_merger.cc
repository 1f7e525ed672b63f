// The merge of one replica (--algo single): the replica is the global model. A copy rather than an
// average of one through the collective, which would read and write the model three times over.
#include <algorithm>
#include <stdexcept>
#include <utility>
#include <vector>

#include "merge/merge_checks.h"
#include "merge/merger.h"

namespace xmlt::merge {
namespace {

class CopyMerger : public Merger {
 public:
  MergeOutcome Merge(const ReplicaSet& replicas, const MergeInput& input, GlobalModel* global) override {
    CheckReplicasAndGlobal(replicas, global);
    CheckOnHost(replicas, global, name());
    if (replicas.count() != 1)
      throw std::invalid_argument("copy merge: one replica, not " + std::to_string(replicas.count()));
    CheckOptionalInput(input, 1, "copy");
    // w_p <- w (no copy: the old w is not needed again), w <- the replica.
    std::vector<float>& w = global->MutableCurrent();
    global->MutablePrevious().swap(w);
    std::copy(replicas.members[0].params, replicas.members[0].params + replicas.size, w.begin());
    MergeOutcome outcome;
    outcome.weights = {1.0};
    return outcome;
  }
  std::string name() const override { return "copy"; }
};

}  // namespace

std::unique_ptr<Merger> MakeCopyMerger() { return std::make_unique<CopyMerger>(); }

}  // namespace xmlt::merge
