// The weighted all-reduce over GPU replicas on NCCL: its set-up, teardown and merge; see
// nccl_all_reduce.h. What the host reads of it: nccl_host_reads.cu.
#include "merge/gpu/nccl_all_reduce.h"

#include <cuda_runtime.h>
#include <nccl.h>

#include <algorithm>
#include <stdexcept>
#include <string>
#include <utility>

#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/device_buffer.h"
#include "merge/gpu/device_global_model.h"
#include "merge/gpu/nccl_merge_state.h"
#include "merge/gpu/replica_kernels.h"

namespace xmlt::merge::gpu {

using kernels::cuda::DeviceBuffer;
using kernels::cuda::DeviceGuard;
using kernels::cuda::PinnedBuffer;

// The GPUs of this process and the NCCL rank of each: (process, GPU) pairs in order of first
// appearance among the replicas; all of them in one process.
void NcclMergeState::MakeGroups(const std::vector<base::ReplicaParams>& all, const NcclRanks* processes) {
  if (processes == nullptr) {
    for (GpuReplicaGroup& group : GroupByGpu(all, count, "NcclAllReduce")) {
      gpus.emplace_back();
      gpus.back().ordinal = group.ordinal;
      gpus.back().rank = gpus.size() - 1;
      gpus.back().replicas = std::move(group.replicas);
    }
    ranks = gpus.size();
    return;
  }
  if (all.empty()) throw std::invalid_argument("NcclAllReduce: no replicas");
  if (processes->owners.size() != all.size())
    throw std::invalid_argument("NcclAllReduce: " + std::to_string(processes->owners.size()) + " owners for " +
                                std::to_string(all.size()) + " replicas");
  if (!processes->from_rank0) throw std::invalid_argument("NcclAllReduce: no way to share NCCL's id between ranks");
  std::vector<std::pair<int, int>> seen;  // (process, GPU) by NCCL rank
  for (size_t i = 0; i < all.size(); ++i) {
    const std::pair<int, int> key{processes->owners[i], all[i].gpu};
    size_t r = std::find(seen.begin(), seen.end(), key) - seen.begin();
    if (r == seen.size()) seen.push_back(key);
    if (key.first != processes->rank) continue;
    if (all[i].params == nullptr && count > 0)
      throw std::invalid_argument("NcclAllReduce: replica " + std::to_string(i) + " of this rank has no parameters");
    auto mine = std::find_if(gpus.begin(), gpus.end(), [&](const Gpu& g) { return g.rank == r; });
    if (mine == gpus.end()) {
      gpus.emplace_back();
      gpus.back().ordinal = key.second;
      gpus.back().rank = r;
      mine = gpus.end() - 1;
    }
    mine->replicas.push_back(i);
  }
  if (gpus.empty())
    throw std::invalid_argument("NcclAllReduce: rank " + std::to_string(processes->rank) + " holds no replica");
  ranks = seen.size();
}

void NcclMergeState::MakeBuffers() {
  shard = count / ranks;
  main = shard * ranks;
  tail = count - main;
  for (Gpu& gpu : gpus) {
    DeviceGuard guard(gpu.ordinal);
    gpu.stream.emplace();
    if (gpu.replicas.size() > 1) gpu.acc = DeviceBuffer<float>(count);
    gpu.partial = DeviceBuffer<double>(kSquaresScratch + replicas.size());
    gpu.norms = PinnedBuffer<double>(replicas.size());
  }
  // Each GPU's shard of w and w_p, then the tail: onto every GPU, back from the first; the finite
  // check counts both (every GPU's copy of the tail is the same).
  std::vector<DeviceGlobalModel::Layout> layouts;
  for (size_t r = 0; r < gpus.size(); ++r)
    layouts.push_back({gpus[r].ordinal,
                       shard + tail,
                       {{gpus[r].rank * shard, 0, shard, true}, {main, shard, tail, r == 0}},
                       {{0, shard + tail}}});
  global = DeviceGlobalModel("NcclAllReduce", std::move(layouts));
}

NcclAllReduce::NcclAllReduce(std::vector<base::ReplicaParams> replicas, size_t count)
    : state_(std::make_unique<NcclMergeState>()) {
  NcclMergeState& m = *state_;
  m.count = count;
  m.MakeGroups(replicas, nullptr);
  m.replicas = std::move(replicas);
  m.MakeBuffers();
  // Last: nothing after it may throw, or the communicators would outlive a half-made object.
  std::vector<int> ordinals;
  for (const NcclMergeState::Gpu& gpu : m.gpus) ordinals.push_back(gpu.ordinal);
  std::vector<ncclComm_t> comms(m.gpus.size(), nullptr);
  XMLT_NCCL_CHECK(ncclCommInitAll(comms.data(), int(m.gpus.size()), ordinals.data()));
  for (size_t r = 0; r < m.gpus.size(); ++r) m.gpus[r].comm = comms[r];
}

NcclAllReduce::NcclAllReduce(std::vector<base::ReplicaParams> replicas, size_t count, NcclRanks processes)
    : state_(std::make_unique<NcclMergeState>()) {
  NcclMergeState& m = *state_;
  m.count = count;
  m.across_processes = true;
  m.MakeGroups(replicas, &processes);
  m.replicas = std::move(replicas);
  m.MakeBuffers();
  ncclUniqueId id{};
  if (processes.rank == 0) XMLT_NCCL_CHECK(ncclGetUniqueId(&id));
  processes.from_rank0(reinterpret_cast<uint8_t*>(&id), sizeof(id));
  // Each of this process's GPUs joins as its rank, in one group (NCCL's way for one thread to init
  // several GPUs); the group returns when every process's ranks have joined.
  std::vector<ncclComm_t> comms(m.gpus.size(), nullptr);
  Grouped([&] {
    for (size_t g = 0; g < m.gpus.size(); ++g) {
      DeviceGuard guard(m.gpus[g].ordinal);  // NCCL takes the current GPU
      XMLT_NCCL_CHECK(ncclCommInitRank(&comms[g], int(m.ranks), id, int(m.gpus[g].rank)));
    }
  });
  for (size_t g = 0; g < m.gpus.size(); ++g) m.gpus[g].comm = comms[g];
}

void NcclMergeState::TearDown(bool abort) {
  for (Gpu& gpu : gpus) {
    if (gpu.comm == nullptr) continue;
    // In a destructor: a failed teardown cannot be helped, and must not throw.
    if (abort) {
      ncclCommAbort(gpu.comm);
    } else {
      ncclCommDestroy(gpu.comm);
    }
    gpu.comm = nullptr;
  }
}

NcclAllReduce::~NcclAllReduce() {
  if (!state_->aborted) state_->TearDown(state_->failed);
}

void NcclAllReduce::Abort() {
  NcclMergeState& m = *state_;
  m.aborted = true;
  std::string first_failure;
  for (NcclMergeState::Gpu& gpu : m.gpus) {
    if (gpu.comm == nullptr) continue;
    const ncclResult_t status = ncclCommAbort(gpu.comm);
    if (status != ncclSuccess && first_failure.empty())
      first_failure = "ncclCommAbort on GPU " + std::to_string(gpu.ordinal) + ": " + ncclGetErrorString(status);
    gpu.comm = nullptr;
  }
  if (!first_failure.empty()) throw std::runtime_error("NcclAllReduce: " + first_failure);
}

void NcclMergeState::Run(const std::vector<double>& weights, const DeviceMomentum* momentum) {
  CheckUsable("a merge");
  if (weights.size() != replicas.size())
    throw std::invalid_argument("NcclAllReduce: " + std::to_string(weights.size()) + " weights for " +
                                std::to_string(replicas.size()) + " replicas");
  if (momentum != nullptr) global.CheckSetBefore("the global momentum");
  if (count == 0) return;
  try {
    Merge(weights, momentum);
  } catch (...) {
    failed = true;
    throw;
  }
}

// One merge, step by step as NCCL's runRing labels its own: each rank's local sum, then without
// momentum one all-reduce; with it a reduce-scatter, the momentum on each rank's shard and an
// all-gather; then the result copied back into the replicas that did not take part.
void NcclMergeState::Merge(const std::vector<double>& weights, const DeviceMomentum* momentum) {
  WeightedSumOps ops{gpus, {}};
  LocalSum(weights, ops);
  if (momentum == nullptr) {
    AllReduce(ops);
  } else {
    ReduceScatter(ops);
    MomentumOnShard(*momentum);
    AllGather();
  }
  CopyBack();
  Finish();
}

// Each rank's input: its one replica pre-multiplied by its weight, or its replicas' weighted sum
// pre-multiplied by 1.
void NcclMergeState::LocalSum(const std::vector<double>& weights, WeightedSumOps& ops) {
  for (size_t r = 0; r < gpus.size(); ++r) {
    Gpu& gpu = gpus[r];
    DeviceGuard guard(gpu.ordinal);
    const cudaStream_t stream = gpu.stream->get();
    float* work = Work(gpu);
    float scalar = 1.0f;
    if (gpu.replicas.size() == 1) {
      scalar = float(weights[gpu.replicas[0]]);
    } else {
      LaunchWeightedSumOfReplicas(stream, work, 0, count, replicas, gpu.replicas, weights);
    }
    ncclRedOp_t op = ncclSum;
    XMLT_NCCL_CHECK(ncclRedOpCreatePreMulSum(&op, &scalar, ncclFloat32, ncclScalarHostImmediate, gpu.comm));
    ops.by_rank.push_back(op);
  }
}

// Without momentum: the whole sum on every rank, in place.
void NcclMergeState::AllReduce(const WeightedSumOps& ops) {
  Grouped([&] {
    for (size_t r = 0; r < gpus.size(); ++r) {
      float* work = Work(gpus[r]);
      XMLT_NCCL_CHECK(
          ncclAllReduce(work, work, count, ncclFloat32, ops.by_rank[r], gpus[r].comm, gpus[r].stream->get()));
    }
  });
}

// With momentum: each rank's shard of the sum, and the tail summed apart on every rank. Every rank
// makes the same calls (shard and tail are the same everywhere), so the j-th call of each rank is
// the same collective.
void NcclMergeState::ReduceScatter(const WeightedSumOps& ops) {
  Grouped([&] {
    for (size_t r = 0; r < gpus.size(); ++r) {
      float* work = Work(gpus[r]);
      if (shard > 0)
        XMLT_NCCL_CHECK(ncclReduceScatter(work, work + gpus[r].rank * shard, shard, ncclFloat32, ops.by_rank[r],
                                          gpus[r].comm, gpus[r].stream->get()));
      if (tail > 0)
        XMLT_NCCL_CHECK(ncclAllReduce(work + main, work + main, tail, ncclFloat32, ops.by_rank[r], gpus[r].comm,
                                      gpus[r].stream->get()));
    }
  });
}

// The momentum rule on the shard each rank owns and on the tail, where it keeps w and w_p.
void NcclMergeState::MomentumOnShard(const DeviceMomentum& momentum) {
  for (size_t r = 0; r < gpus.size(); ++r) {
    Gpu& gpu = gpus[r];
    DeviceGuard guard(gpu.ordinal);
    float* work = Work(gpu);
    if (shard > 0)
      LaunchMomentum(gpu.stream->get(), work + gpu.rank * shard, global.current(r), global.previous(r), shard,
                     momentum);
    if (tail > 0)
      LaunchMomentum(gpu.stream->get(), work + main, global.current(r) + shard, global.previous(r) + shard, tail,
                     momentum);
  }
}

// Every rank's finished shard to every rank.
void NcclMergeState::AllGather() {
  if (shard == 0) return;
  Grouped([&] {
    for (size_t r = 0; r < gpus.size(); ++r) {
      float* work = Work(gpus[r]);
      XMLT_NCCL_CHECK(ncclAllGather(work + gpus[r].rank * shard, work, shard, ncclFloat32, gpus[r].comm,
                                    gpus[r].stream->get()));
    }
  });
}

// The result into every replica that did not take part itself (copies within the GPU).
void NcclMergeState::CopyBack() {
  for (Gpu& gpu : gpus) {
    DeviceGuard guard(gpu.ordinal);
    const float* work = Work(gpu);
    for (const size_t i : gpu.replicas)
      if (replicas[i].params != work)
        XMLT_CUDA_CHECK(cudaMemcpyAsync(replicas[i].params, work, count * sizeof(float), cudaMemcpyDeviceToDevice,
                                        gpu.stream->get()));
  }
}

void NcclAllReduce::WeightedAllReduce(const std::vector<double>& weights) { state_->Run(weights, nullptr); }

void NcclAllReduce::WeightedAllReduce(const std::vector<double>& weights, const DeviceMomentum& momentum) {
  state_->Run(weights, &momentum);
}

size_t NcclAllReduce::gpus() const { return state_->ranks; }
size_t NcclAllReduce::shard_count() const { return state_->shard; }
size_t NcclAllReduce::tail_count() const { return state_->tail; }

}  // namespace xmlt::merge::gpu
