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
// gives every rank an equal shard, so it takes the largest multiple of the GPU count (shard_count()
// per rank) and the tail of fewer than N values is summed apart by an ncclAllReduce in the same
// group; every GPU keeps the tail of w and w_p and applies the rule to it (the all-reduce gives
// every rank the same sum, so the same bits). A GPU with one replica thus hands NCCL the replica
// itself with or without momentum: no model-sized copy in or out, and no accumulator.
//
// Across processes (NcclRanks: MPI ranks, or threads playing them) one communicator spans every
// process's GPUs: rank 0 makes NCCL's unique id, the others receive it through `from_rank0`, and
// each process inits its GPUs' ranks in one group (ncclCommInitRank). NCCL ranks follow the
// replicas' order of first appearance of (process, GPU), the same on every process, and each
// process reduces and finishes only its own replicas and shards. What all processes need goes
// through NCCL too: the norms (each GPU's replicas' norms in their slots, zeros elsewhere, summed
// in double: exact), the finite check (the count of non-finite values, summed) and the global
// model for the host (each shard all-gathered on every GPU, then copied down by the first), so
// every process gets the same bits. Every process makes every call, in the same order.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "merge/gpu/device_collective.h"
#include "merge/gpu/nccl_ranks.h"

namespace xmlt::merge::gpu {

struct NcclMergeState;  // nccl_merge_state.h

class NcclAllReduce final : public DeviceCollective {
 public:
  // Sets up one NCCL communicator per GPU of `replicas` (ncclCommInitAll), a stream each, and an
  // accumulator of the model's size on each GPU with several replicas. Throws
  // std::invalid_argument on no replicas or a null pointer, std::runtime_error on CUDA or NCCL
  // failures.
  NcclAllReduce(std::vector<base::ReplicaParams> replicas, size_t count);
  // The same across processes: every process makes this call with the same replicas (the others'
  // with null pointers if it likes), owners and count. Throws std::invalid_argument when the
  // owners do not match the replicas or a process holds none.
  NcclAllReduce(std::vector<base::ReplicaParams> replicas, size_t count, NcclRanks ranks);
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

  size_t gpus() const;         // NCCL ranks: distinct GPUs of every process
  size_t shard_count() const;  // the values each rank owns after the reduce-scatter: count / gpus()
  size_t tail_count() const;   // the values summed apart, by an all-reduce: count % gpus()

 private:
  std::unique_ptr<NcclMergeState> state_;
};

}  // namespace xmlt::merge::gpu
