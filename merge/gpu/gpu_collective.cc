// The weighted all-reduce on the GPUs behind merge::Collective; see gpu_mergers.h.
#include <memory>
#include <stdexcept>
#include <utility>
#include <vector>

#include "merge/gpu/gpu_mergers.h"
#include "merge/gpu/gpu_replicas.h"
#include "merge/gpu/nccl_all_reduce.h"
#include "merge/gpu/ring_all_reduce.h"
#include "merge/gpu/shared_merger.h"

namespace xmlt::merge::gpu {
namespace {

class GpuCollective final : public Collective,
                            public GlobalModelOnGpus,
                            public std::enable_shared_from_this<GpuCollective> {
 public:
  GpuCollective(std::unique_ptr<DeviceCollective> device, const ReplicaSet& replicas)
      : device_(std::move(device)), replicas_(replicas.members), size_(replicas.size) {}

  std::vector<double> SquaredNorms(const ReplicaSet& replicas) override {
    CheckSame(replicas);
    return device_->SquaredNorms();
  }

  // Only a plain sum: a finish step on the host would need the replicas there.
  void WeightedAllReduce(const ReplicaSet& replicas, const std::vector<double>& weights,
                         const FinishBlock& finish) override {
    CheckSame(replicas);
    if (finish) throw std::logic_error("GPU collective: a finish step runs on the host; use the momentum all-reduce");
    device_->WeightedAllReduce(weights);
  }

  void WeightedAllReduceWithMomentum(const ReplicaSet& replicas, const std::vector<double>& weights, double momentum,
                                     MomentumMode mode, GlobalModel* global) override {
    CheckSame(replicas);
    MergeKeepingGlobalOnGpus(
        global, shared_from_this(), [&](const float* w, const float* w_p) { device_->SetGlobalModel(w, w_p); },
        [&] { device_->WeightedAllReduce(weights, {momentum, mode == MomentumMode::kNesterov}); });
  }

  void Fetch(float* current, float* previous) override { device_->GetGlobalModel(current, previous); }
  bool CurrentFinite() override { return device_->GlobalModelFinite(); }

 private:
  void CheckSame(const ReplicaSet& replicas) const {
    if (replicas.members != replicas_ || replicas.size != size_)
      throw std::invalid_argument("GPU collective: built for other replicas");
  }

  std::unique_ptr<DeviceCollective> device_;
  std::vector<base::ReplicaParams> replicas_;
  size_t size_;
};

}  // namespace

std::shared_ptr<Collective> MakeGpuCollective(GpuCollectiveKind kind, const ReplicaSet& replicas) {
  const std::vector<base::ReplicaParams> on_gpus = GpuReplicas(replicas);
  std::unique_ptr<DeviceCollective> device;
  switch (kind) {
    case GpuCollectiveKind::kRing:
      device = std::make_unique<RingAllReduce>(on_gpus, replicas.size);
      break;
    case GpuCollectiveKind::kNccl:
      device = std::make_unique<NcclAllReduce>(on_gpus, replicas.size);
      break;
  }
  return std::make_shared<GpuCollective>(std::move(device), replicas);
}

std::shared_ptr<Collective> MakeGpuCollectiveAcrossRanks(const ReplicaSet& replicas, NcclRanks ranks) {
  auto device = std::make_unique<NcclAllReduce>(GpuReplicas(replicas), replicas.size, std::move(ranks));
  return std::make_shared<GpuCollective>(std::move(device), replicas);
}

}  // namespace xmlt::merge::gpu
