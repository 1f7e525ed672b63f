// NcclAllReduce's state, which its files share (nccl_all_reduce.cu: set-up, teardown and the merge;
// nccl_host_reads.cu: what the host reads): this process's GPUs with their communicators, streams
// and buffers, and the global model's shards. Private to them; see nccl_all_reduce.h.
#pragma once

#include <cuda_runtime.h>
#include <nccl.h>

#include <cstddef>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/device_buffer.h"
#include "merge/gpu/device_collective.h"
#include "merge/gpu/device_global_model.h"
#include "merge/gpu/nccl_ranks.h"

namespace xmlt::merge::gpu {

// Makes `each_rank`'s NCCL calls, one per rank, as one group; the group is closed even when a call
// fails, or this thread's later NCCL calls would all join it.
template <class F>
inline void Grouped(F&& each_rank) {
  XMLT_NCCL_CHECK(ncclGroupStart());
  try {
    each_rank();
  } catch (...) {
    ncclGroupEnd();
    throw;
  }
  XMLT_NCCL_CHECK(ncclGroupEnd());
}

struct NcclMergeState {
  // One of this process's GPUs.
  struct Gpu {
    int ordinal = 0;
    size_t rank = 0;               // its NCCL rank: which shard it owns
    std::vector<size_t> replicas;  // indices into `replicas`, in order
    ncclComm_t comm = nullptr;
    std::optional<kernels::cuda::Stream> stream;  // made with this GPU current
    // Only on a GPU with several replicas: their weighted sum.
    kernels::cuda::DeviceBuffer<float> acc;
    // The norms' per-block sums, then one total per replica (all replicas).
    kernels::cuda::DeviceBuffer<double> partial;
    kernels::cuda::PinnedBuffer<double> norms;  // one per replica (all replicas)
  };

  std::vector<base::ReplicaParams> replicas;
  size_t count = 0;
  size_t shard = 0;  // count / GPUs: what each rank owns after the reduce-scatter
  size_t main = 0;   // shard * GPUs: what the reduce-scatter takes
  size_t tail = 0;   // count - main (< GPUs): summed apart by an all-reduce
  std::vector<Gpu> gpus;  // this process's, in rank order
  // Each GPU's shard of w and w_p, then the tail (every GPU keeps it): shard + tail values.
  DeviceGlobalModel global;
  size_t ranks = 0;       // NCCL ranks: GPUs of every process
  bool across_processes = false;
  bool aborted = false;
  bool failed = false;  // a merge threw: its collectives may never finish

  // What a GPU hands to NCCL: its one replica where it has one, else its accumulator.
  float* Work(Gpu& gpu) {
    if (gpu.replicas.size() == 1) return replicas[gpu.replicas[0]].params;
    return gpu.acc.data();
  }

  void CheckUsable(const char* what) const {
    if (aborted) throw std::logic_error(std::string("NcclAllReduce: ") + what + " after Abort()");
  }

  // Waits for every GPU's stream, then throws if NCCL reports a failed collective: a GPU lost here
  // fails the synchronization, one lost in another process only the communicator's async error.
  void Finish() {
    for (Gpu& gpu : gpus) gpu.stream->Synchronize();
    for (Gpu& gpu : gpus) {
      ncclResult_t async = ncclSuccess;
      XMLT_NCCL_CHECK(ncclCommGetAsyncError(gpu.comm, &async));
      if (async != ncclSuccess)
        throw std::runtime_error("NcclAllReduce: NCCL's collective failed on GPU " + std::to_string(gpu.ordinal) +
                                 " (a GPU of another rank was lost, or its communicator aborted): " +
                                 ncclGetErrorString(async));
    }
  }
  // Sums `n` doubles at `values` (on each GPU) over every NCCL rank, in place.
  void SumDoubles(const std::vector<double*>& values, size_t n) {
    Grouped([&] {
      for (size_t g = 0; g < gpus.size(); ++g)
        XMLT_NCCL_CHECK(
            ncclAllReduce(values[g], values[g], n, ncclFloat64, ncclSum, gpus[g].comm, gpus[g].stream->get()));
    });
  }

  // Each rank's reduction op, a sum pre-multiplied by its weight; destroyed once the calls given
  // them have returned.
  struct WeightedSumOps {
    std::vector<Gpu>& gpus;
    std::vector<ncclRedOp_t> by_rank;
    ~WeightedSumOps() {
      for (size_t r = 0; r < by_rank.size(); ++r) ncclRedOpDestroy(by_rank[r], gpus[r].comm);
    }
  };

  void MakeGroups(const std::vector<base::ReplicaParams>& all, const NcclRanks* processes);
  void MakeBuffers();
  void TearDown(bool abort);
  void Run(const std::vector<double>& weights, const DeviceMomentum* momentum);
  // One merge (nccl_all_reduce.cu), in the steps named below.
  void Merge(const std::vector<double>& weights, const DeviceMomentum* momentum);
  void LocalSum(const std::vector<double>& weights, WeightedSumOps& ops);
  void AllReduce(const WeightedSumOps& ops);
  void ReduceScatter(const WeightedSumOps& ops);
  void MomentumOnShard(const DeviceMomentum& momentum);
  void AllGather();
  void CopyBack();
  // w and w_p across processes (nccl_host_reads.cu).
  void GatherGlobal(float* current, float* previous);
};


}  // namespace xmlt::merge::gpu
