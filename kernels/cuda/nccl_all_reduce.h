// The weighted all-reduce over replicas in GPU memory (device_collective.h) on NCCL: one
// communicator rank and one stream per physical GPU, in order of first appearance. A GPU holding
// one replica hands it to NCCL as it is, its weight applied by a pre-multiplied sum
// (ncclRedOpCreatePreMulSum), so nothing is read or written on that GPU besides the collective; a
// GPU holding several (logical devices, cuda:0x4) sums them with their weights into its
// accumulator first and pre-multiplies by 1, since every rank of a collective must reduce with the
// same kind of op. Without momentum that is one ncclAllReduce, in place.
//
// With the global momentum of the model-averaging merges the sum is an ncclReduceScatter, after
// which each GPU applies the rule to the shard it owns (it keeps that shard of w and w_p), then an
// ncclAllGather: the owner of each shard applies the rule, as in the ring. NCCL's reduce-scatter
// gives every rank an equal shard, so the model is padded to a multiple of the GPU count with
// zeros that stay zero (the rule runs on real values only).
#pragma once

#include <cstddef>
#include <memory>
#include <vector>

#include "kernels/cuda/device_collective.h"

namespace xmlt::kernels::cuda {

class NcclAllReduce final : public DeviceCollective {
 public:
  // Sets up one NCCL communicator per GPU of `replicas` (ncclCommInitAll), a stream each, and an
  // accumulator of the padded size on each GPU with several replicas (SetGlobalModel adds one on
  // the others when the model needs padding). Throws std::invalid_argument on no replicas or a
  // null pointer, std::runtime_error on CUDA or NCCL failures.
  NcclAllReduce(std::vector<GpuReplica> replicas, size_t count);
  // Destroys the communicators, or aborts them when Abort() was not called but a merge failed (a
  // destroy waits for the failed collective, which may never end).
  ~NcclAllReduce() override;
  NcclAllReduce(const NcclAllReduce&) = delete;
  NcclAllReduce& operator=(const NcclAllReduce&) = delete;

  void WeightedAllReduce(const std::vector<double>& weights) override;
  void WeightedAllReduce(const std::vector<double>& weights, const DeviceMomentum& momentum) override;

  void SetGlobalModel(const float* current, const float* previous) override;
  void GetGlobalModel(float* current, float* previous) override;
  bool GlobalModelFinite() override;
  std::vector<double> SquaredNorms() override;

  // Tears the communicators down without waiting for their collectives (ncclCommAbort), after a
  // lost GPU: the peers of a lost rank would wait for it forever. Nothing may be called after it
  // but the destructor.
  void Abort();

  size_t gpus() const;           // NCCL ranks: distinct GPUs
  size_t padded_count() const;   // the model rounded up to a multiple of gpus()

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace xmlt::kernels::cuda
