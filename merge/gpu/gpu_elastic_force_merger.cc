// The elastic force merge on the GPUs behind merge::Merger; see gpu_mergers.h.
#include <memory>
#include <stdexcept>
#include <string>

#include "merge/gpu/elastic_force.h"
#include "merge/gpu/gpu_mergers.h"
#include "merge/gpu/gpu_replicas.h"
#include "merge/gpu/shared_merger.h"
#include "merge/merge_checks.h"

namespace xmlt::merge::gpu {
namespace {

class GpuElasticForceMerger final : public Merger,
                                    public GlobalModelOnGpus,
                                    public std::enable_shared_from_this<GpuElasticForceMerger> {
 public:
  GpuElasticForceMerger(const MergeOptions& options, const ReplicaSet& replicas)
      : alpha_(options.elastic_alpha > 0.0 ? options.elastic_alpha : 1.0 / double(replicas.count())),
        replicas_(replicas.members),
        device_(GpuReplicas(replicas), replicas.size, alpha_, options.momentum) {
    // The host merger's refusals, word for word where they apply.
    if (options.momentum_mode == MomentumMode::kNesterov)
      throw std::invalid_argument("elastic force merge: Nesterov momentum is not supported; use heavy momentum");
  }

  MergeOutcome Merge(const ReplicaSet& replicas, const MergeInput& input, GlobalModel* global) override {
    CheckReplicasAndGlobal(replicas, global);
    CheckOptionalInput(input, replicas.count(), "elastic force");
    if (replicas.members != replicas_) throw std::invalid_argument("GPU elastic force merge: built for other replicas");
    MergeKeepingGlobalOnGpus(
        global, shared_from_this(), [&](const float* w, const float* w_p) { device_.SetGlobalModel(w, w_p); },
        [&] { device_.Merge(); });
    MergeOutcome outcome;
    outcome.weights.assign(replicas.count(), alpha_);
    return outcome;
  }

  std::string name() const override { return "elastic_force"; }
  void Fetch(float* current, float* previous) override { device_.GetGlobalModel(current, previous); }
  bool CurrentFinite() override { return device_.GlobalModelFinite(); }

 private:
  double alpha_;
  std::vector<base::ReplicaParams> replicas_;
  DeviceElasticForce device_;
};

}  // namespace

std::unique_ptr<Merger> MakeGpuElasticForceMerger(const MergeOptions& options, const ReplicaSet& replicas) {
  const double a = options.elastic_alpha;
  if (!(a >= 0.0 && a <= 1.0))
    throw std::invalid_argument("elastic force merge: elastic alpha must be in (0, 1] (0 means 1/n), got " +
                                std::to_string(a));
  return std::make_unique<SharedMerger<GpuElasticForceMerger>>(
      std::make_shared<GpuElasticForceMerger>(options, replicas));
}

}  // namespace xmlt::merge::gpu
