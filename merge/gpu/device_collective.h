// What the merges of replicas that live in GPU memory share: the replicas by GPU, the global
// momentum rule, and the weighted all-reduce interface that the ring (ring_all_reduce.h) and NCCL
// (nccl_all_reduce.h) implement. The global model w and its previous value w_p live on the GPUs
// too; they are copied to or from the host only through SetGlobalModel and GetGlobalModel.
#pragma once

#include <cstddef>
#include <stdexcept>
#include <string>
#include <vector>

#include "base/replica_params.h"

namespace xmlt::merge::gpu {

// The global momentum rule (merge/global_momentum.h, value for value): kHeavy: w' = sum +
// gamma (w - w_p), replicas take w'; kNesterov: w' = sum, replicas take the look-ahead
// w' + gamma (w' - w). Then w_p = w, w = w'.
struct DeviceMomentum {
  double gamma = 0;
  bool nesterov = false;
};

// The replicas of each GPU, GPUs in order of first appearance: (ordinal, indices into `replicas`).
// Throws std::invalid_argument, naming `who`, on no replicas or a null replica of a non-empty model.
struct GpuReplicaGroup {
  int ordinal = 0;
  std::vector<size_t> replicas;
};
inline std::vector<GpuReplicaGroup> GroupByGpu(const std::vector<base::ReplicaParams>& replicas, size_t count,
                                               const std::string& who) {
  if (replicas.empty()) throw std::invalid_argument(who + ": no replicas");
  std::vector<GpuReplicaGroup> groups;
  for (size_t i = 0; i < replicas.size(); ++i) {
    if (replicas[i].params == nullptr && count > 0)
      throw std::invalid_argument(who + ": replica " + std::to_string(i) + " has no parameters");
    size_t g = 0;
    while (g < groups.size() && groups[g].ordinal != replicas[i].gpu) ++g;
    if (g == groups.size()) groups.push_back({replicas[i].gpu, {}});
    groups[g].replicas.push_back(i);
  }
  return groups;
}

class DeviceCollective {
 public:
  virtual ~DeviceCollective() = default;

  // Every replica becomes sum_i weights[i] * replica_i (float sums; the weights need not sum to
  // 1). Returns when every replica holds the result. Throws std::invalid_argument on a weight
  // count other than the replica count.
  virtual void WeightedAllReduce(const std::vector<double>& weights) = 0;
  // The same sum finished by the global momentum rule, w and w_p kept on the GPUs (set by
  // SetGlobalModel first; std::logic_error otherwise).
  virtual void WeightedAllReduce(const std::vector<double>& weights, const DeviceMomentum& momentum) = 0;

  // w and w_p (`count` floats each, host memory) onto the GPUs, at the start of a run or after a
  // resume or rollback; and back, for evaluation and checkpoints.
  virtual void SetGlobalModel(const float* current, const float* previous) = 0;
  virtual void GetGlobalModel(float* current, float* previous) = 0;
  // Whether every value of w is finite, counted on the GPUs (only a flag reaches the host).
  virtual bool GlobalModelFinite() = 0;

  // The sum of squares of each replica's parameters, accumulated in double on its GPU.
  virtual std::vector<double> SquaredNorms() = 0;
};

}  // namespace xmlt::merge::gpu
