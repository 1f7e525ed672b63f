// The merge of one replica (--algo single): the replica is the global model. A copy rather than an
// average of one through the collective, which would read and write the model three times over.
// The run keeps no w_p for it (scheduler::KeepsPreviousModel); one that does, a w_p is kept as the
// other merges keep it (w_p <- w).
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
    if (replicas.count() != 1)
      throw std::invalid_argument("copy merge: one replica, not " + std::to_string(replicas.count()));
    CheckFp32Replicas(replicas, "copy merge");
    if (replicas.members[0].params == nullptr && replicas.size > 0)
      throw std::invalid_argument("merge: null replica parameters");
    if (global == nullptr || global->size() != replicas.size ||
        (global->previous_size() != 0 && global->previous_size() != replicas.size))
      throw std::invalid_argument("copy merge: the global model is not the replica's size");
    CheckOnHost(replicas, global, name());
    CheckOptionalInput(input, 1, "copy");
    // w_p <- w where it is kept (no copy: the old w is not needed again), w <- the replica.
    std::vector<float>& w = global->MutableCurrent();
    if (global->previous_size() != 0) global->MutablePrevious().swap(w);
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
