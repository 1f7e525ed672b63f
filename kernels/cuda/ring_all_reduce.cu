// The ring all-reduce over GPU replicas; see ring_all_reduce.h.
#include "kernels/cuda/ring_all_reduce.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <stdexcept>
#include <string>

#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/device_buffer.h"
#include "kernels/cuda/launch.h"

namespace xmlt::kernels::cuda {
namespace {

constexpr unsigned kThreads = 256;
constexpr unsigned kMaxBlocks = 4096;
constexpr int kTermsPerPass = 8;  // replicas of one GPU summed per kernel pass

unsigned BlocksFor(size_t count) {
  return unsigned(std::clamp<size_t>((count + kThreads - 1) / kThreads, 1, kMaxBlocks));
}

// Up to kTermsPerPass replicas and their weights, passed by value as kernel arguments (nothing to
// copy from the host before a merge).
struct Terms {
  const float* params[kTermsPerPass];
  float weight[kTermsPerPass];
  int count;
};

// acc[j] = (accumulate ? acc[j] : 0) + sum_t weight[t] * params[t][offset + j], j < n.
__global__ void __launch_bounds__(kThreads)
    WeightedSumKernel(float* acc, size_t offset, size_t n, Terms terms, bool accumulate) {
  for (size_t j = size_t(blockIdx.x) * blockDim.x + threadIdx.x; j < n; j += size_t(gridDim.x) * blockDim.x) {
    float v = accumulate ? acc[offset + j] : 0.0f;
    for (int t = 0; t < terms.count; ++t) v += terms.weight[t] * terms.params[t][offset + j];
    acc[offset + j] = v;
  }
}

// The global momentum rule on one chunk (merge/global_momentum.cc's, value for value): `values` is
// the weighted sum and becomes what the replicas take.
__global__ void __launch_bounds__(kThreads)
    MomentumKernel(float* values, float* current, float* previous, size_t n, float gamma, bool nesterov) {
  for (size_t j = size_t(blockIdx.x) * blockDim.x + threadIdx.x; j < n; j += size_t(gridDim.x) * blockDim.x) {
    if (nesterov) {
      const float next = values[j];
      previous[j] = current[j];
      current[j] = next;
      values[j] = next + gamma * (next - previous[j]);
    } else {
      const float next = values[j] + gamma * (current[j] - previous[j]);
      previous[j] = current[j];
      current[j] = next;
      values[j] = next;
    }
  }
}

__global__ void __launch_bounds__(kThreads) AddKernel(float* acc, const float* received, size_t n) {
  for (size_t j = size_t(blockIdx.x) * blockDim.x + threadIdx.x; j < n; j += size_t(gridDim.x) * blockDim.x)
    acc[j] += received[j];
}

// partial[block] = sum of params[j]^2 over the block's stride of [0, n), in double.
__global__ void __launch_bounds__(kThreads) SquaresKernel(const float* params, size_t n, double* partial) {
  __shared__ double sums[kThreads];
  double local = 0;
  for (size_t j = size_t(blockIdx.x) * blockDim.x + threadIdx.x; j < n; j += size_t(gridDim.x) * blockDim.x)
    local += double(params[j]) * double(params[j]);
  sums[threadIdx.x] = local;
  __syncthreads();
  for (unsigned half = kThreads / 2; half > 0; half /= 2) {
    if (threadIdx.x < half) sums[threadIdx.x] += sums[threadIdx.x + half];
    __syncthreads();
  }
  if (threadIdx.x == 0) partial[blockIdx.x] = sums[0];
}

// total[0] = sum of partial[0, n) (one block).
__global__ void __launch_bounds__(kThreads) SumKernel(const double* partial, unsigned n, double* total) {
  __shared__ double sums[kThreads];
  double local = 0;
  for (unsigned j = threadIdx.x; j < n; j += kThreads) local += partial[j];
  sums[threadIdx.x] = local;
  __syncthreads();
  for (unsigned half = kThreads / 2; half > 0; half /= 2) {
    if (threadIdx.x < half) sums[threadIdx.x] += sums[threadIdx.x + half];
    __syncthreads();
  }
  if (threadIdx.x == 0) total[0] = sums[0];
}

// [begin, end) of piece `index` of `count` near-equal pieces of [lo, hi).
struct Range {
  size_t begin, end;
  size_t size() const { return end - begin; }
};
Range Piece(size_t lo, size_t hi, size_t index, size_t count) {
  const size_t n = hi - lo;
  return {lo + n * index / count, lo + n * (index + 1) / count};
}

}  // namespace

struct RingAllReduce::Impl {
  struct Gpu {
    int ordinal = 0;
    std::vector<size_t> replicas;  // indices into `replicas`, in order
    DeviceBuffer<float> acc;
    std::vector<DeviceBuffer<float>> received;  // per partition
    std::vector<Stream> streams;                // per partition
    std::vector<Event> events;                  // per partition, two each: alternate steps
    DeviceBuffer<double> partial;               // the norms' per-block sums, then the totals
    PinnedBuffer<double> norms;                 // the totals on the host
    DeviceBuffer<float> current, previous;      // w and w_p, valid on the chunks this GPU owns
  };

  std::vector<RingReplica> replicas;
  size_t count = 0;
  size_t partitions = 0;
  bool peer_access = true;
  std::vector<Gpu> gpus;  // in order of first appearance

  Event& EventOf(size_t g, size_t p, size_t step) { return gpus[g].events[2 * p + step % 2]; }

  // The GPU at ring position k of partition p: each partition's ring starts at another GPU.
  size_t At(size_t p, size_t k) const { return (k + p) % gpus.size(); }

  Range PartitionRange(size_t p) const { return Piece(0, count, p, partitions); }
  Range Chunk(size_t p, size_t c) const {
    const Range part = PartitionRange(p);
    return Piece(part.begin, part.end, c, gpus.size());
  }

  // Step `step` (1 .. 2N-2) of partition p at ring position k: receive from position k - 1 after
  // its step - 1; the reduce-scatter adds, the all-gather overwrites.
  void RingStep(size_t p, size_t k, size_t step) {
    const size_t n = gpus.size();
    const size_t receiver = At(p, k), sender = At(p, (k + n - 1) % n);
    Gpu& to = gpus[receiver];
    const Gpu& from = gpus[sender];
    const cudaStream_t stream = to.streams[p].get();
    DeviceGuard guard(to.ordinal);
    XMLT_CUDA_CHECK(cudaStreamWaitEvent(stream, EventOf(sender, p, step - 1).get(), 0));
    const bool reduce = step <= n - 1;
    const size_t s = reduce ? step - 1 : step - n;  // the step within its phase
    const size_t chunk = reduce ? (k + 2 * n - 1 - s) % n : (k + n - s) % n;
    const Range r = Chunk(p, chunk);
    if (r.size() > 0) {
      float* destination = reduce ? to.received[p].data() : to.acc.data() + r.begin;
      XMLT_CUDA_CHECK(cudaMemcpyPeerAsync(destination, to.ordinal, from.acc.data() + r.begin, from.ordinal,
                                          r.size() * sizeof(float), stream));
      if (reduce) {
        XMLT_LAUNCH(AddKernel, BlocksFor(r.size()), kThreads, 0, stream)(to.acc.data() + r.begin,
                                                                         to.received[p].data(), r.size());
        XMLT_CUDA_CHECK_LAUNCH();
      }
    }
    EventOf(receiver, p, step).Record(stream);
  }

  // The chunk of partition p that ring position k holds whole after the reduce-scatter.
  Range Owned(size_t p, size_t k) const { return Chunk(p, (k + 1) % gpus.size()); }

  // The owner of each chunk applies the global momentum rule to it, after its last reduce-scatter
  // step (the all-gather's first copy from it waits for this, through the same event).
  void Finish(size_t p, size_t k, const RingMomentum& momentum) {
    const size_t g = At(p, k);
    Gpu& gpu = gpus[g];
    const Range r = Owned(p, k);
    const size_t last = gpus.size() - 1;  // the last reduce-scatter step (0: the local sum)
    if (r.size() > 0) {
      DeviceGuard guard(gpu.ordinal);
      const cudaStream_t stream = gpu.streams[p].get();
      XMLT_LAUNCH(MomentumKernel, BlocksFor(r.size()), kThreads, 0, stream)(
          gpu.acc.data() + r.begin, gpu.current.data() + r.begin, gpu.previous.data() + r.begin, r.size(),
          float(momentum.gamma), momentum.nesterov);
      XMLT_CUDA_CHECK_LAUNCH();
      EventOf(g, p, last).Record(stream);
    }
  }

  // Copies between each owner's chunks of w, w_p and host memory (to_device: host to GPUs).
  void MoveGlobal(float* current, float* previous, bool to_device) {
    for (size_t p = 0; p < partitions; ++p) {
      for (size_t k = 0; k < gpus.size(); ++k) {
        Gpu& gpu = gpus[At(p, k)];
        const Range r = Owned(p, k);
        if (r.size() == 0) continue;
        DeviceGuard guard(gpu.ordinal);
        const size_t bytes = r.size() * sizeof(float);
        for (auto [host, device] : {std::pair{current, gpu.current.data()}, std::pair{previous, gpu.previous.data()}}) {
          if (to_device) {
            XMLT_CUDA_CHECK(cudaMemcpy(device + r.begin, host + r.begin, bytes, cudaMemcpyHostToDevice));
          } else {
            XMLT_CUDA_CHECK(cudaMemcpy(host + r.begin, device + r.begin, bytes, cudaMemcpyDeviceToHost));
          }
        }
      }
    }
  }

  void Run(const std::vector<double>& weights, const RingMomentum* momentum);

  // Each GPU's weighted sum of its own replicas over partition p, into its accumulator.
  void LocalSum(size_t g, size_t p, const std::vector<double>& weights) {
    Gpu& gpu = gpus[g];
    const Range part = PartitionRange(p);
    const cudaStream_t stream = gpu.streams[p].get();
    DeviceGuard guard(gpu.ordinal);
    for (size_t first = 0; first < gpu.replicas.size() && part.size() > 0; first += kTermsPerPass) {
      Terms terms{};
      terms.count = int(std::min<size_t>(kTermsPerPass, gpu.replicas.size() - first));
      for (int t = 0; t < terms.count; ++t) {
        const size_t i = gpu.replicas[first + size_t(t)];
        terms.params[t] = replicas[i].params;
        terms.weight[t] = float(weights[i]);
      }
      XMLT_LAUNCH(WeightedSumKernel, BlocksFor(part.size()), kThreads, 0, stream)(
          gpu.acc.data(), part.begin, part.size(), terms, first > 0);
      XMLT_CUDA_CHECK_LAUNCH();
    }
    EventOf(g, p, 0).Record(stream);
  }

  // The result back into each of the GPU's replicas (copies within the GPU).
  void Scatter(size_t g, size_t p) {
    Gpu& gpu = gpus[g];
    const Range part = PartitionRange(p);
    if (part.size() == 0) return;
    DeviceGuard guard(gpu.ordinal);
    for (const size_t i : gpu.replicas)
      XMLT_CUDA_CHECK(cudaMemcpyAsync(replicas[i].params + part.begin, gpu.acc.data() + part.begin,
                                      part.size() * sizeof(float), cudaMemcpyDeviceToDevice, gpu.streams[p].get()));
  }
};

RingAllReduce::RingAllReduce(std::vector<RingReplica> replicas, size_t count, size_t partitions)
    : impl_(std::make_unique<Impl>()) {
  if (replicas.empty()) throw std::invalid_argument("RingAllReduce: no replicas");
  Impl& m = *impl_;
  m.replicas = std::move(replicas);
  m.count = count;
  for (size_t i = 0; i < m.replicas.size(); ++i) {
    if (m.replicas[i].params == nullptr && count > 0)
      throw std::invalid_argument("RingAllReduce: replica " + std::to_string(i) + " has no parameters");
    auto it = std::find_if(m.gpus.begin(), m.gpus.end(),
                           [&](const Impl::Gpu& g) { return g.ordinal == m.replicas[i].gpu; });
    if (it == m.gpus.end()) {
      m.gpus.emplace_back();
      m.gpus.back().ordinal = m.replicas[i].gpu;
      it = m.gpus.end() - 1;
    }
    it->replicas.push_back(i);
  }
  const size_t n = m.gpus.size();
  m.partitions = partitions == 0 ? n : partitions;
  size_t largest_chunk = 0;
  for (size_t p = 0; p < m.partitions; ++p)
    for (size_t c = 0; c < n; ++c) largest_chunk = std::max(largest_chunk, m.Chunk(p, c).size());
  for (Impl::Gpu& gpu : m.gpus) {
    DeviceGuard guard(gpu.ordinal);
    gpu.acc = DeviceBuffer<float>(count);
    for (size_t p = 0; p < m.partitions; ++p) {
      gpu.received.emplace_back(n > 1 ? largest_chunk : 0);
      gpu.streams.emplace_back();
      gpu.events.emplace_back();
      gpu.events.emplace_back();
    }
    gpu.partial = DeviceBuffer<double>(kMaxBlocks + gpu.replicas.size());
    gpu.norms = PinnedBuffer<double>(gpu.replicas.size());
  }
  // Each GPU copies from its left neighbour in every partition's ring (rotations keep neighbours).
  for (size_t k = 0; k < n && n > 1; ++k) {
    const int receiver = m.gpus[k].ordinal, sender = m.gpus[(k + n - 1) % n].ordinal;
    int can = 0;
    XMLT_CUDA_CHECK(cudaDeviceCanAccessPeer(&can, receiver, sender));
    if (!can) {
      m.peer_access = false;
      continue;
    }
    DeviceGuard guard(receiver);
    const cudaError_t status = cudaDeviceEnablePeerAccess(sender, 0);
    if (status == cudaErrorPeerAccessAlreadyEnabled) {
      cudaGetLastError();  // enabled by an earlier ring: fine
    } else {
      XMLT_CUDA_CHECK(status);
    }
  }
}

RingAllReduce::~RingAllReduce() = default;

void RingAllReduce::Impl::Run(const std::vector<double>& weights, const RingMomentum* momentum) {
  if (weights.size() != replicas.size())
    throw std::invalid_argument("RingAllReduce: " + std::to_string(weights.size()) + " weights for " +
                                std::to_string(replicas.size()) + " replicas");
  const size_t n = gpus.size();
  // Issued step by step across the partitions, so that each partition's copies overlap the others'
  // additions; within a step every GPU waits only for its left neighbour's previous step.
  for (size_t p = 0; p < partitions; ++p)
    for (size_t g = 0; g < n; ++g) LocalSum(g, p, weights);
  for (size_t step = 1; step + 1 < 2 * n; ++step)
    for (size_t p = 0; p < partitions; ++p)
      for (size_t k = 0; k < n; ++k) {
        RingStep(p, k, step);
        if (momentum != nullptr && step == n - 1) Finish(p, k, *momentum);
      }
  if (momentum != nullptr && n == 1)  // no ring: the one GPU owns everything after its local sum
    for (size_t p = 0; p < partitions; ++p) Finish(p, 0, *momentum);
  for (size_t p = 0; p < partitions; ++p)
    for (size_t g = 0; g < n; ++g) Scatter(g, p);
  for (Gpu& gpu : gpus)
    for (Stream& stream : gpu.streams) stream.Synchronize();
}

void RingAllReduce::WeightedAllReduce(const std::vector<double>& weights) { impl_->Run(weights, nullptr); }

void RingAllReduce::WeightedAllReduce(const std::vector<double>& weights, const RingMomentum& momentum) {
  if (impl_->gpus.front().current.size() != impl_->count)
    throw std::logic_error("RingAllReduce: the global momentum needs SetGlobalModel first");
  impl_->Run(weights, &momentum);
}

void RingAllReduce::SetGlobalModel(const float* current, const float* previous) {
  Impl& m = *impl_;
  for (Impl::Gpu& gpu : m.gpus) {
    if (gpu.current.size() == m.count) continue;
    DeviceGuard guard(gpu.ordinal);
    gpu.current = DeviceBuffer<float>(m.count);
    gpu.previous = DeviceBuffer<float>(m.count);
  }
  m.MoveGlobal(const_cast<float*>(current), const_cast<float*>(previous), true);
}

void RingAllReduce::GetGlobalModel(float* current, float* previous) {
  if (impl_->gpus.front().current.size() != impl_->count)
    throw std::logic_error("RingAllReduce: no global model was set");
  impl_->MoveGlobal(current, previous, false);
}

std::vector<double> RingAllReduce::SquaredNorms() {
  Impl& m = *impl_;
  std::vector<double> norms(m.replicas.size(), 0.0);
  for (Impl::Gpu& gpu : m.gpus) {
    if (m.count == 0) continue;
    DeviceGuard guard(gpu.ordinal);
    const cudaStream_t stream = gpu.streams[0].get();
    const unsigned blocks = BlocksFor(m.count);
    for (size_t t = 0; t < gpu.replicas.size(); ++t) {
      XMLT_LAUNCH(SquaresKernel, blocks, kThreads, 0, stream)(m.replicas[gpu.replicas[t]].params, m.count,
                                                              gpu.partial.data());
      XMLT_CUDA_CHECK_LAUNCH();
      XMLT_LAUNCH(SumKernel, 1, kThreads, 0, stream)(gpu.partial.data(), blocks, gpu.partial.data() + kMaxBlocks + t);
      XMLT_CUDA_CHECK_LAUNCH();
    }
    XMLT_CUDA_CHECK(cudaMemcpyAsync(gpu.norms.data(), gpu.partial.data() + kMaxBlocks,
                                    gpu.replicas.size() * sizeof(double), cudaMemcpyDeviceToHost, stream));
  }
  for (Impl::Gpu& gpu : m.gpus) {
    if (m.count == 0) continue;
    gpu.streams[0].Synchronize();
    for (size_t t = 0; t < gpu.replicas.size(); ++t) norms[gpu.replicas[t]] = gpu.norms.data()[t];
  }
  return norms;
}

size_t RingAllReduce::gpus() const { return impl_->gpus.size(); }
size_t RingAllReduce::partitions() const { return impl_->partitions; }
bool RingAllReduce::peer_access() const { return impl_->peer_access; }

}  // namespace xmlt::kernels::cuda
