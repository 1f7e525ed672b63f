// Adasum on the GPUs behind merge::Merger; see gpu_mergers.h.
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "merge/gpu/device_adasum.h"
#include "merge/gpu/gpu_mergers.h"
#include "merge/gpu/gpu_replicas.h"
#include "merge/gpu/shared_merger.h"
#include "merge/merge_checks.h"

namespace xmlt::merge::gpu {
namespace {

class GpuAdasumMerger final : public Merger,
                              public GlobalModelOnGpus,
                              public std::enable_shared_from_this<GpuAdasumMerger> {
 public:
  GpuAdasumMerger(const MergeOptions& options, const ReplicaSet& replicas)
      : replicas_(replicas.members),
        device_(GpuReplicas(replicas), replicas.size, replicas.tensors,
                {options.momentum, options.momentum_mode == MomentumMode::kNesterov}) {}

  MergeOutcome Merge(const ReplicaSet& replicas, const MergeInput& input, GlobalModel* global) override {
    CheckReplicasAndGlobal(replicas, global);
    CheckOptionalInput(input, replicas.count(), "adasum");
    if (replicas.members != replicas_) throw std::invalid_argument("GPU adasum merge: built for other replicas");
    MergeKeepingGlobalOnGpus(
        global, shared_from_this(), [&](const float* w, const float* w_p) { device_.SetGlobalModel(w, w_p); },
        [&] { device_.Merge(); });
    MergeOutcome outcome;
    outcome.weights.assign(replicas.count(), 1.0);  // as the host merge reports it
    return outcome;
  }

  std::string name() const override { return "adasum"; }
  void Fetch(float* current, float* previous) override { device_.GetGlobalModel(current, previous); }
  bool CurrentFinite() override { return device_.GlobalModelFinite(); }

 private:
  std::vector<base::ReplicaParams> replicas_;
  DeviceAdasum device_;
};

}  // namespace

std::unique_ptr<Merger> MakeGpuAdasumMerger(const MergeOptions& options, const ReplicaSet& replicas) {
  return std::make_unique<SharedMerger<GpuAdasumMerger>>(std::make_shared<GpuAdasumMerger>(options, replicas));
}

}  // namespace xmlt::merge::gpu
