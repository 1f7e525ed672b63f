// The weighted all-reduce over GPU replicas on NCCL; see nccl_all_reduce.h.
#include "merge/gpu/nccl_all_reduce.h"

#include <cuda_runtime.h>
#include <nccl.h>

#include <algorithm>
#include <optional>
#include <stdexcept>
#include <string>

#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/device_buffer.h"
#include "merge/gpu/device_global_model.h"
#include "merge/gpu/replica_kernels.h"

namespace xmlt::merge::gpu {

using kernels::cuda::DeviceBuffer;
using kernels::cuda::DeviceGuard;
using kernels::cuda::PinnedBuffer;
using kernels::cuda::Stream;

namespace {

// Makes `each_rank`'s NCCL calls, one per rank, as one group; the group is closed even when a call
// fails, or this thread's later NCCL calls would all join it.
template <class F>
void Grouped(F&& each_rank) {
  XMLT_NCCL_CHECK(ncclGroupStart());
  try {
    each_rank();
  } catch (...) {
    ncclGroupEnd();
    throw;
  }
  XMLT_NCCL_CHECK(ncclGroupEnd());
}

}  // namespace

struct NcclAllReduce::Impl {
  // One of this process's GPUs.
  struct Gpu {
    int ordinal = 0;
    size_t rank = 0;               // its NCCL rank: which shard it owns
    std::vector<size_t> replicas;  // indices into `replicas`, in order
    ncclComm_t comm = nullptr;
    std::optional<Stream> stream;  // made with this GPU current
    DeviceBuffer<float> acc;       // only on a GPU with several replicas: their weighted sum
    DeviceBuffer<double> partial;  // the norms' per-block sums, then one total per replica (all replicas)
    PinnedBuffer<double> norms;    // one per replica (all replicas)
  };

  std::vector<GpuReplica> replicas;
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

  void MakeGroups(const std::vector<GpuReplica>& all, const NcclRanks* processes);
  void MakeBuffers();
  void Run(const std::vector<double>& weights, const DeviceMomentum* momentum);
  void Merge(const std::vector<double>& weights, const DeviceMomentum* momentum);
  void GatherGlobal(float* current, float* previous);
  void TearDown(bool abort);
};

// The GPUs of this process and the NCCL rank of each: (process, GPU) pairs in order of first
// appearance among the replicas; all of them in one process.
void NcclAllReduce::Impl::MakeGroups(const std::vector<GpuReplica>& all, const NcclRanks* processes) {
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

void NcclAllReduce::Impl::MakeBuffers() {
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

NcclAllReduce::NcclAllReduce(std::vector<GpuReplica> replicas, size_t count) : impl_(std::make_unique<Impl>()) {
  Impl& m = *impl_;
  m.count = count;
  m.MakeGroups(replicas, nullptr);
  m.replicas = std::move(replicas);
  m.MakeBuffers();
  // Last: nothing after it may throw, or the communicators would outlive a half-made object.
  std::vector<int> ordinals;
  for (const Impl::Gpu& gpu : m.gpus) ordinals.push_back(gpu.ordinal);
  std::vector<ncclComm_t> comms(m.gpus.size(), nullptr);
  XMLT_NCCL_CHECK(ncclCommInitAll(comms.data(), int(m.gpus.size()), ordinals.data()));
  for (size_t r = 0; r < m.gpus.size(); ++r) m.gpus[r].comm = comms[r];
}

NcclAllReduce::NcclAllReduce(std::vector<GpuReplica> replicas, size_t count, NcclRanks processes)
    : impl_(std::make_unique<Impl>()) {
  Impl& m = *impl_;
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

void NcclAllReduce::Impl::TearDown(bool abort) {
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
  if (!impl_->aborted) impl_->TearDown(impl_->failed);
}

void NcclAllReduce::Abort() {
  Impl& m = *impl_;
  m.aborted = true;
  std::string first_failure;
  for (Impl::Gpu& gpu : m.gpus) {
    if (gpu.comm == nullptr) continue;
    const ncclResult_t status = ncclCommAbort(gpu.comm);
    if (status != ncclSuccess && first_failure.empty())
      first_failure = "ncclCommAbort on GPU " + std::to_string(gpu.ordinal) + ": " + ncclGetErrorString(status);
    gpu.comm = nullptr;
  }
  if (!first_failure.empty()) throw std::runtime_error("NcclAllReduce: " + first_failure);
}

void NcclAllReduce::Impl::Run(const std::vector<double>& weights, const DeviceMomentum* momentum) {
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

void NcclAllReduce::Impl::Merge(const std::vector<double>& weights, const DeviceMomentum* momentum) {
  const bool sharded = momentum != nullptr;
  // The ops may go as soon as the calls given them have returned.
  struct Ops {
    std::vector<Gpu>& gpus;
    std::vector<ncclRedOp_t> made;  // by rank
    ~Ops() {
      for (size_t r = 0; r < made.size(); ++r) ncclRedOpDestroy(made[r], gpus[r].comm);
    }
  } ops{gpus, {}};
  // Each rank's input: its one replica pre-multiplied by its weight, or its replicas' weighted sum
  // pre-multiplied by 1.
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
    ops.made.push_back(op);
  }

  if (!sharded) {
    Grouped([&] {
      for (size_t r = 0; r < gpus.size(); ++r) {
        float* work = Work(gpus[r]);
        XMLT_NCCL_CHECK(
            ncclAllReduce(work, work, count, ncclFloat32, ops.made[r], gpus[r].comm, gpus[r].stream->get()));
      }
    });
  } else {
    // Every rank makes the same calls (shard and tail are the same everywhere), so the j-th call of
    // each rank is the same collective.
    Grouped([&] {
      for (size_t r = 0; r < gpus.size(); ++r) {
        float* work = Work(gpus[r]);
        if (shard > 0)
          XMLT_NCCL_CHECK(ncclReduceScatter(work, work + gpus[r].rank * shard, shard, ncclFloat32, ops.made[r],
                                            gpus[r].comm, gpus[r].stream->get()));
        if (tail > 0)
          XMLT_NCCL_CHECK(ncclAllReduce(work + main, work + main, tail, ncclFloat32, ops.made[r], gpus[r].comm,
                                        gpus[r].stream->get()));
      }
    });
    for (size_t r = 0; r < gpus.size(); ++r) {
      Gpu& gpu = gpus[r];
      DeviceGuard guard(gpu.ordinal);
      float* work = Work(gpu);
      if (shard > 0)
        LaunchMomentum(gpu.stream->get(), work + gpu.rank * shard, global.current(r), global.previous(r), shard,
                       *momentum);
      if (tail > 0)
        LaunchMomentum(gpu.stream->get(), work + main, global.current(r) + shard, global.previous(r) + shard, tail,
                       *momentum);
    }
    if (shard > 0)
      Grouped([&] {
        for (size_t r = 0; r < gpus.size(); ++r) {
          float* work = Work(gpus[r]);
          XMLT_NCCL_CHECK(ncclAllGather(work + gpus[r].rank * shard, work, shard, ncclFloat32, gpus[r].comm,
                                        gpus[r].stream->get()));
        }
      });
  }
  // The result into every replica that did not take part itself (copies within the GPU).
  for (Gpu& gpu : gpus) {
    DeviceGuard guard(gpu.ordinal);
    const float* work = Work(gpu);
    for (const size_t i : gpu.replicas)
      if (replicas[i].params != work)
        XMLT_CUDA_CHECK(cudaMemcpyAsync(replicas[i].params, work, count * sizeof(float), cudaMemcpyDeviceToDevice,
                                        gpu.stream->get()));
  }
  Finish();
}

void NcclAllReduce::WeightedAllReduce(const std::vector<double>& weights) { impl_->Run(weights, nullptr); }

void NcclAllReduce::WeightedAllReduce(const std::vector<double>& weights, const DeviceMomentum& momentum) {
  impl_->Run(weights, &momentum);
}

void NcclAllReduce::SetGlobalModel(const float* current, const float* previous) {
  impl_->CheckUsable("SetGlobalModel");
  impl_->global.Upload(current, previous);
}

// Across processes: each of w and w_p all-gathered on every GPU (into its accumulator, or a buffer
// made for the call), then copied down from this process's first GPU, with the tail, which every
// GPU holds.
void NcclAllReduce::Impl::GatherGlobal(float* current, float* previous) {
  std::vector<DeviceBuffer<float>> made(gpus.size());
  std::vector<float*> into(gpus.size());
  for (size_t g = 0; g < gpus.size(); ++g) {
    DeviceGuard guard(gpus[g].ordinal);
    if (gpus[g].acc.size() >= main) {
      into[g] = gpus[g].acc.data();
    } else {
      made[g] = DeviceBuffer<float>(main);
      into[g] = made[g].data();
    }
  }
  for (const auto& host_and_which :
       {std::pair{current, &DeviceGlobalModel::current}, std::pair{previous, &DeviceGlobalModel::previous}}) {
    float* const host = host_and_which.first;
    const auto which = host_and_which.second;
    if (shard > 0)
      Grouped([&] {
        for (size_t g = 0; g < gpus.size(); ++g)
          XMLT_NCCL_CHECK(ncclAllGather((global.*which)(g), into[g], shard, ncclFloat32, gpus[g].comm,
                                        gpus[g].stream->get()));
      });
    Gpu& first = gpus[0];
    DeviceGuard guard(first.ordinal);
    if (shard > 0)
      XMLT_CUDA_CHECK(
          cudaMemcpyAsync(host, into[0], main * sizeof(float), cudaMemcpyDeviceToHost, first.stream->get()));
    if (tail > 0)
      XMLT_CUDA_CHECK(cudaMemcpyAsync(host + main, (global.*which)(0) + shard, tail * sizeof(float),
                                      cudaMemcpyDeviceToHost, first.stream->get()));
    Finish();
  }
}

void NcclAllReduce::GetGlobalModel(float* current, float* previous) {
  impl_->global.CheckSet();  // here, not in Download: across processes the model is gathered
  impl_->CheckUsable("GetGlobalModel");
  if (impl_->across_processes) {
    impl_->GatherGlobal(current, previous);
  } else {
    impl_->global.Download(current, previous);
  }
}

bool NcclAllReduce::GlobalModelFinite() {
  Impl& m = *impl_;
  m.global.CheckSet();
  m.CheckUsable("GlobalModelFinite");
  std::vector<cudaStream_t> streams;
  for (Impl::Gpu& gpu : m.gpus) streams.push_back(gpu.stream->get());
  const double non_finite = double(m.global.CountNonFinite(streams));
  if (!m.across_processes) return non_finite == 0;
  // The other processes' counts: summed by NCCL, in one double on each GPU (its norms' scratch).
  std::vector<double*> slot;
  for (Impl::Gpu& gpu : m.gpus) {
    DeviceGuard guard(gpu.ordinal);
    const double mine = &gpu == &m.gpus[0] ? non_finite : 0.0;
    XMLT_CUDA_CHECK(cudaMemcpy(gpu.partial.data(), &mine, sizeof(double), cudaMemcpyHostToDevice));
    slot.push_back(gpu.partial.data());
  }
  m.SumDoubles(slot, 1);
  double total = 0;
  DeviceGuard guard(m.gpus[0].ordinal);
  XMLT_CUDA_CHECK(cudaMemcpyAsync(&total, slot[0], sizeof(double), cudaMemcpyDeviceToHost, m.gpus[0].stream->get()));
  m.Finish();
  return total == 0;
}

std::vector<double> NcclAllReduce::SquaredNorms() {
  Impl& m = *impl_;
  m.CheckUsable("SquaredNorms");
  std::vector<double> norms(m.replicas.size(), 0.0);
  if (m.count == 0) return norms;
  // Each replica's norm in its own slot; across processes the slots of the others' replicas are
  // zeros, and NCCL's sum of the slots gives every process every norm (x + 0 is exact).
  const size_t n = m.replicas.size();
  std::vector<double*> slots;
  for (Impl::Gpu& gpu : m.gpus) {
    DeviceGuard guard(gpu.ordinal);
    const cudaStream_t stream = gpu.stream->get();
    double* slot = gpu.partial.data() + kSquaresScratch;
    if (m.across_processes) XMLT_CUDA_CHECK(cudaMemsetAsync(slot, 0, n * sizeof(double), stream));
    for (const size_t i : gpu.replicas)
      LaunchSquaredNorm(stream, m.replicas[i].params, m.count, gpu.partial.data(), slot + i);
    slots.push_back(slot);
  }
  // Only the norms reach the host: every slot from the first GPU across processes, each GPU's own
  // replicas' slots here.
  if (m.across_processes) m.SumDoubles(slots, n);
  for (size_t g = 0; g < m.gpus.size(); ++g) {
    Impl::Gpu& gpu = m.gpus[g];
    DeviceGuard guard(gpu.ordinal);
    if (m.across_processes && g == 0)
      XMLT_CUDA_CHECK(cudaMemcpyAsync(gpu.norms.data(), slots[g], n * sizeof(double), cudaMemcpyDeviceToHost,
                                      gpu.stream->get()));
    if (!m.across_processes)
      for (const size_t i : gpu.replicas)
        XMLT_CUDA_CHECK(cudaMemcpyAsync(gpu.norms.data() + i, slots[g] + i, sizeof(double), cudaMemcpyDeviceToHost,
                                        gpu.stream->get()));
  }
  m.Finish();
  for (Impl::Gpu& gpu : m.gpus) {
    if (m.across_processes) {
      for (size_t i = 0; i < n; ++i) norms[i] = m.gpus[0].norms.data()[i];
    } else {
      for (const size_t i : gpu.replicas) norms[i] = gpu.norms.data()[i];
    }
  }
  return norms;
}

size_t NcclAllReduce::gpus() const { return impl_->ranks; }
size_t NcclAllReduce::shard_count() const { return impl_->shard; }
size_t NcclAllReduce::tail_count() const { return impl_->tail; }

}  // namespace xmlt::merge::gpu
