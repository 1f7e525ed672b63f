// The weighted all-reduce over GPU replicas on NCCL; see nccl_all_reduce.h.
#include "kernels/cuda/nccl_all_reduce.h"

#include <cuda_runtime.h>
#include <nccl.h>

#include <algorithm>
#include <optional>
#include <stdexcept>
#include <string>

#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/device_buffer.h"
#include "kernels/cuda/replica_kernels.h"

namespace xmlt::kernels::cuda {
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
  struct Gpu {
    int ordinal = 0;
    std::vector<size_t> replicas;  // indices into `replicas`, in order
    ncclComm_t comm = nullptr;
    std::optional<Stream> stream;  // made with this GPU current
    DeviceBuffer<float> acc;       // padded; only where the replicas cannot take part themselves
    DeviceBuffer<double> partial;  // the norms' per-block sums, then the totals
    PinnedBuffer<double> norms;
    DeviceBuffer<unsigned long long> non_finite;
    PinnedBuffer<unsigned long long> non_finite_host;
    DeviceBuffer<float> current, previous;  // this GPU's shard of w and w_p
  };

  std::vector<GpuReplica> replicas;
  size_t count = 0;
  size_t padded = 0;  // count rounded up to a multiple of the GPU count
  size_t shard = 0;   // padded / GPUs: what each rank owns after the reduce-scatter
  std::vector<Gpu> gpus;  // rank order
  bool global_model = false;
  bool aborted = false;
  bool failed = false;  // a merge threw: its collectives may never finish

  // The real values [begin, end) of rank r's shard (empty beyond the model).
  size_t OwnedBegin(size_t r) const { return std::min(count, r * shard); }
  size_t OwnedEnd(size_t r) const { return std::min(count, (r + 1) * shard); }

  // What a GPU hands to NCCL: its one replica where it has one and the collective reads no more
  // than the model (an all-reduce, or a reduce-scatter of an unpadded model); else its accumulator.
  float* Work(Gpu& gpu, bool sharded) {
    if (gpu.replicas.size() == 1 && (!sharded || padded == count)) return replicas[gpu.replicas[0]].params;
    return gpu.acc.data();
  }

  // The padded accumulator of a GPU, made when first needed: at once for several replicas, with
  // the global model for one replica that a reduce-scatter cannot read as it is.
  void MakeAccumulator(Gpu& gpu) {
    if (gpu.acc.size() == padded) return;
    DeviceGuard guard(gpu.ordinal);
    gpu.acc = DeviceBuffer<float>(padded);
    // The padding enters every reduce-scatter as zeros; nothing writes other values there.
    if (padded > count)
      XMLT_CUDA_CHECK(cudaMemsetAsync(gpu.acc.data() + count, 0, (padded - count) * sizeof(float), gpu.stream->get()));
    gpu.stream->Synchronize();
  }

  void CheckUsable(const char* what) const {
    if (aborted) throw std::logic_error(std::string("NcclAllReduce: ") + what + " after Abort()");
  }

  void Run(const std::vector<double>& weights, const DeviceMomentum* momentum);
  void Merge(const std::vector<double>& weights, const DeviceMomentum* momentum);
  void MoveGlobal(float* current, float* previous, bool to_device);
  void TearDown(bool abort);
};

NcclAllReduce::NcclAllReduce(std::vector<GpuReplica> replicas, size_t count) : impl_(std::make_unique<Impl>()) {
  Impl& m = *impl_;
  for (GpuReplicaGroup& group : GroupByGpu(replicas, count, "NcclAllReduce")) {
    m.gpus.emplace_back();
    m.gpus.back().ordinal = group.ordinal;
    m.gpus.back().replicas = std::move(group.replicas);
  }
  m.replicas = std::move(replicas);
  m.count = count;
  const size_t n = m.gpus.size();
  m.shard = (count + n - 1) / n;
  m.padded = m.shard * n;
  for (Impl::Gpu& gpu : m.gpus) {
    DeviceGuard guard(gpu.ordinal);
    gpu.stream.emplace();
    if (gpu.replicas.size() > 1) m.MakeAccumulator(gpu);
    gpu.partial = DeviceBuffer<double>(kSquaresScratch + gpu.replicas.size());
    gpu.norms = PinnedBuffer<double>(gpu.replicas.size());
    gpu.non_finite = DeviceBuffer<unsigned long long>(1);
    gpu.non_finite_host = PinnedBuffer<unsigned long long>(1);
  }
  // Last: nothing after it may throw, or the communicators would outlive a half-made object.
  std::vector<int> ordinals;
  for (const Impl::Gpu& gpu : m.gpus) ordinals.push_back(gpu.ordinal);
  std::vector<ncclComm_t> comms(n, nullptr);
  XMLT_NCCL_CHECK(ncclCommInitAll(comms.data(), int(n), ordinals.data()));
  for (size_t r = 0; r < n; ++r) m.gpus[r].comm = comms[r];
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
  if (momentum != nullptr && !global_model)
    throw std::logic_error("NcclAllReduce: the global momentum needs SetGlobalModel first");
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
  // Each rank's input: its one replica (or the replica's padded copy) pre-multiplied by its weight,
  // or its replicas' weighted sum pre-multiplied by 1.
  for (size_t r = 0; r < gpus.size(); ++r) {
    Gpu& gpu = gpus[r];
    DeviceGuard guard(gpu.ordinal);
    const cudaStream_t stream = gpu.stream->get();
    float* work = Work(gpu, sharded);
    float scalar = 1.0f;
    if (gpu.replicas.size() == 1) {
      scalar = float(weights[gpu.replicas[0]]);
      if (work != replicas[gpu.replicas[0]].params)
        XMLT_CUDA_CHECK(cudaMemcpyAsync(work, replicas[gpu.replicas[0]].params, count * sizeof(float),
                                        cudaMemcpyDeviceToDevice, stream));
    } else {
      for (size_t first = 0; first < gpu.replicas.size(); first += kTermsPerPass) {
        WeightedTerms terms{};
        terms.count = int(std::min<size_t>(kTermsPerPass, gpu.replicas.size() - first));
        for (int t = 0; t < terms.count; ++t) {
          const size_t i = gpu.replicas[first + size_t(t)];
          terms.params[t] = replicas[i].params;
          terms.weight[t] = float(weights[i]);
        }
        LaunchWeightedSum(stream, work, 0, count, terms, first > 0);
      }
    }
    ncclRedOp_t op = ncclSum;
    XMLT_NCCL_CHECK(ncclRedOpCreatePreMulSum(&op, &scalar, ncclFloat32, ncclScalarHostImmediate, gpu.comm));
    ops.made.push_back(op);
  }

  if (!sharded) {
    Grouped([&] {
      for (size_t r = 0; r < gpus.size(); ++r) {
        float* work = Work(gpus[r], false);
        XMLT_NCCL_CHECK(
            ncclAllReduce(work, work, count, ncclFloat32, ops.made[r], gpus[r].comm, gpus[r].stream->get()));
      }
    });
  } else {
    Grouped([&] {
      for (size_t r = 0; r < gpus.size(); ++r) {
        float* work = Work(gpus[r], true);
        XMLT_NCCL_CHECK(ncclReduceScatter(work, work + r * shard, shard, ncclFloat32, ops.made[r], gpus[r].comm,
                                          gpus[r].stream->get()));
      }
    });
    for (size_t r = 0; r < gpus.size(); ++r) {
      Gpu& gpu = gpus[r];
      const size_t begin = OwnedBegin(r), end = OwnedEnd(r);
      if (end == begin) continue;
      DeviceGuard guard(gpu.ordinal);
      LaunchMomentum(gpu.stream->get(), Work(gpu, true) + begin, gpu.current.data(), gpu.previous.data(), end - begin,
                     *momentum);
    }
    Grouped([&] {
      for (size_t r = 0; r < gpus.size(); ++r) {
        float* work = Work(gpus[r], true);
        XMLT_NCCL_CHECK(
            ncclAllGather(work + r * shard, work, shard, ncclFloat32, gpus[r].comm, gpus[r].stream->get()));
      }
    });
  }
  // The result into every replica that did not take part itself (copies within the GPU).
  for (Gpu& gpu : gpus) {
    DeviceGuard guard(gpu.ordinal);
    const float* work = Work(gpu, sharded);
    for (const size_t i : gpu.replicas)
      if (replicas[i].params != work)
        XMLT_CUDA_CHECK(cudaMemcpyAsync(replicas[i].params, work, count * sizeof(float), cudaMemcpyDeviceToDevice,
                                        gpu.stream->get()));
  }
  for (Gpu& gpu : gpus) gpu.stream->Synchronize();
}

void NcclAllReduce::WeightedAllReduce(const std::vector<double>& weights) { impl_->Run(weights, nullptr); }

void NcclAllReduce::WeightedAllReduce(const std::vector<double>& weights, const DeviceMomentum& momentum) {
  impl_->Run(weights, &momentum);
}

// Copies between each rank's shard of w, w_p and host memory (to_device: host to GPUs).
void NcclAllReduce::Impl::MoveGlobal(float* current, float* previous, bool to_device) {
  for (size_t r = 0; r < gpus.size(); ++r) {
    Gpu& gpu = gpus[r];
    const size_t begin = OwnedBegin(r), end = OwnedEnd(r);
    if (end == begin) continue;
    DeviceGuard guard(gpu.ordinal);
    const size_t bytes = (end - begin) * sizeof(float);
    for (auto [host, device] : {std::pair{current, gpu.current.data()}, std::pair{previous, gpu.previous.data()}}) {
      if (to_device) {
        XMLT_CUDA_CHECK(cudaMemcpy(device, host + begin, bytes, cudaMemcpyHostToDevice));
      } else {
        XMLT_CUDA_CHECK(cudaMemcpy(host + begin, device, bytes, cudaMemcpyDeviceToHost));
      }
    }
  }
}

void NcclAllReduce::SetGlobalModel(const float* current, const float* previous) {
  Impl& m = *impl_;
  m.CheckUsable("SetGlobalModel");
  for (Impl::Gpu& gpu : m.gpus) {
    if (m.global_model) break;
    DeviceGuard guard(gpu.ordinal);
    gpu.current = DeviceBuffer<float>(m.shard);
    gpu.previous = DeviceBuffer<float>(m.shard);
    if (m.padded != m.count) m.MakeAccumulator(gpu);
  }
  m.global_model = true;
  m.MoveGlobal(const_cast<float*>(current), const_cast<float*>(previous), true);
}

void NcclAllReduce::GetGlobalModel(float* current, float* previous) {
  if (!impl_->global_model) throw std::logic_error("NcclAllReduce: no global model was set");
  impl_->CheckUsable("GetGlobalModel");
  impl_->MoveGlobal(current, previous, false);
}

bool NcclAllReduce::GlobalModelFinite() {
  Impl& m = *impl_;
  if (!m.global_model) throw std::logic_error("NcclAllReduce: no global model was set");
  m.CheckUsable("GlobalModelFinite");
  for (size_t r = 0; r < m.gpus.size(); ++r) {
    Impl::Gpu& gpu = m.gpus[r];
    DeviceGuard guard(gpu.ordinal);
    const cudaStream_t stream = gpu.stream->get();
    XMLT_CUDA_CHECK(cudaMemsetAsync(gpu.non_finite.data(), 0, sizeof(unsigned long long), stream));
    LaunchCountNonFinite(stream, gpu.current.data(), m.OwnedEnd(r) - m.OwnedBegin(r), gpu.non_finite.data());
    XMLT_CUDA_CHECK(cudaMemcpyAsync(gpu.non_finite_host.data(), gpu.non_finite.data(), sizeof(unsigned long long),
                                    cudaMemcpyDeviceToHost, stream));
  }
  bool finite = true;
  for (Impl::Gpu& gpu : m.gpus) {
    gpu.stream->Synchronize();
    finite = finite && gpu.non_finite_host.data()[0] == 0;
  }
  return finite;
}

std::vector<double> NcclAllReduce::SquaredNorms() {
  Impl& m = *impl_;
  m.CheckUsable("SquaredNorms");
  std::vector<double> norms(m.replicas.size(), 0.0);
  if (m.count == 0) return norms;
  for (Impl::Gpu& gpu : m.gpus) {
    DeviceGuard guard(gpu.ordinal);
    const cudaStream_t stream = gpu.stream->get();
    for (size_t t = 0; t < gpu.replicas.size(); ++t)
      LaunchSquaredNorm(stream, m.replicas[gpu.replicas[t]].params, m.count, gpu.partial.data(),
                        gpu.partial.data() + kSquaresScratch + t);
    XMLT_CUDA_CHECK(cudaMemcpyAsync(gpu.norms.data(), gpu.partial.data() + kSquaresScratch,
                                    gpu.replicas.size() * sizeof(double), cudaMemcpyDeviceToHost, stream));
  }
  for (Impl::Gpu& gpu : m.gpus) {
    gpu.stream->Synchronize();
    for (size_t t = 0; t < gpu.replicas.size(); ++t) norms[gpu.replicas[t]] = gpu.norms.data()[t];
  }
  return norms;
}

size_t NcclAllReduce::gpus() const { return impl_->gpus.size(); }
size_t NcclAllReduce::padded_count() const { return impl_->padded; }

}  // namespace xmlt::kernels::cuda
