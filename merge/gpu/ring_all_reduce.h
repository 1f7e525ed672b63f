// A weighted all-reduce over replicas that live in GPU memory, on the GPUs: every replica ends
// holding sum_i weights[i] * replica_i. The replicas of one GPU (logical devices, cuda:0x4) are
// summed there by one kernel, with their weights, into that GPU's accumulator; the accumulators
// then go around a ring of the GPUs, chunked: a reduce-scatter (each GPU adds the chunk its left
// neighbour sends into its own, N-1 steps) then an all-gather (the summed chunks travel on, N-1
// steps), so each GPU sends and receives 2(N-1)/N of the model. The model is cut into partitions,
// each with its own stream on every GPU and its own ring starting at a different GPU, so that the
// copies of one partition overlap the additions of another. Copies between GPUs are peer copies
// where the GPUs allow peer access, and staged by the runtime through host memory where they do
// not; a step waits for its sender through events, never through the host.
//
// With the global momentum of the model-averaging merges (merge/global_momentum.h), the global
// model w and its previous value w_p live on the GPUs too, each chunk on the GPU that owns it
// after the reduce-scatter, which applies the rule to it before the all-gather: the same
// arithmetic as the host's, by the shard's owner, with no copy to the host.
#pragma once

#include <cstddef>
#include <memory>
#include <vector>

#include "merge/gpu/device_collective.h"

namespace xmlt::merge::gpu {

class RingAllReduce final : public DeviceCollective {
 public:
  // Sets up the ring over the GPUs of `replicas` (in order of first appearance) for models of
  // `count` floats: an accumulator and receive buffers on each GPU, `partitions` streams per GPU
  // (0: one per GPU), events. Enables peer access between the GPUs where they allow it. Throws
  // std::invalid_argument on no replicas or a null pointer, std::runtime_error on CUDA failures.
  RingAllReduce(std::vector<base::ReplicaParams> replicas, size_t count, size_t partitions = 0);
  ~RingAllReduce() override;
  RingAllReduce(const RingAllReduce&) = delete;
  RingAllReduce& operator=(const RingAllReduce&) = delete;

  void WeightedAllReduce(const std::vector<double>& weights) override;
  // The momentum rule runs on each chunk's owner after the reduce-scatter, which keeps that chunk
  // of w and w_p.
  void WeightedAllReduce(const std::vector<double>& weights, const DeviceMomentum& momentum) override;
  // The weighted sum left in each GPU's accumulator (Sum), the replicas untouched: for merges
  // that give each replica its own result (the elastic force).
  void WeightedSumToEveryGpu(const std::vector<double>& weights);
  // GPU `gpu`'s accumulator (`count` floats): the last sum once a merge returned.
  const float* Sum(int gpu) const;

  void SetGlobalModel(const float* current, const float* previous) override;
  void GetGlobalModel(float* current, float* previous) override;
  bool GlobalModelFinite() override;
  std::vector<double> SquaredNorms() override;

  size_t gpus() const;        // distinct GPUs in the ring
  size_t partitions() const;  // rings run side by side
  bool peer_access() const;   // whether every pair of neighbours copies directly

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace xmlt::merge::gpu
