// The Adasum merge on GPU replicas; see device_adasum.h.
#include "kernels/cuda/device_adasum.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <cfloat>
#include <stdexcept>
#include <string>
#include <utility>

#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/device_buffer.h"
#include "kernels/cuda/launch.h"
#include "kernels/cuda/replica_kernels.h"
#include "merge/adasum.h"

namespace xmlt::kernels::cuda {
namespace {

constexpr unsigned kThreads = 256;
// Enough blocks to fill a GPU; the loops stride over larger tensors. Bounds the dots' scratch.
constexpr unsigned kMaxBlocks = 1024;

unsigned BlocksFor(size_t count) {
  return unsigned(std::clamp<size_t>((count + kThreads - 1) / kThreads, 1, kMaxBlocks));
}

// The round's starting point, one expression for the deltas and the update so that both see the
// same bits (merge/adasum_merger.cc does the same on the host).
__device__ __forceinline__ float Start(float current, float previous, float gamma, bool nesterov) {
  return nesterov ? current + gamma * (current - previous) : current;
}

__global__ void __launch_bounds__(kThreads)
    DeltaKernel(float* params, const float* current, const float* previous, size_t n, float gamma, bool nesterov) {
  for (size_t j = size_t(blockIdx.x) * blockDim.x + threadIdx.x; j < n; j += size_t(gridDim.x) * blockDim.x)
    params[j] -= Start(current[j], previous[j], gamma, nesterov);
}

// partial[3 * block + {0, 1, 2}] = the block's share of a.b, |a|^2, |b|^2, in double.
__global__ void __launch_bounds__(kThreads) DotsKernel(const float* a, const float* b, size_t n, double* partial) {
  __shared__ double ab[kThreads];
  __shared__ double aa[kThreads];
  __shared__ double bb[kThreads];
  double sab = 0, saa = 0, sbb = 0;
  for (size_t j = size_t(blockIdx.x) * blockDim.x + threadIdx.x; j < n; j += size_t(gridDim.x) * blockDim.x) {
    const double x = a[j], y = b[j];
    sab += x * y;
    saa += x * x;
    sbb += y * y;
  }
  ab[threadIdx.x] = sab;
  aa[threadIdx.x] = saa;
  bb[threadIdx.x] = sbb;
  __syncthreads();
  for (unsigned half = kThreads / 2; half > 0; half /= 2) {
    if (threadIdx.x < half) {
      ab[threadIdx.x] += ab[threadIdx.x + half];
      aa[threadIdx.x] += aa[threadIdx.x + half];
      bb[threadIdx.x] += bb[threadIdx.x + half];
    }
    __syncthreads();
  }
  if (threadIdx.x == 0) {
    partial[3 * blockIdx.x] = ab[0];
    partial[3 * blockIdx.x + 1] = aa[0];
    partial[3 * blockIdx.x + 2] = bb[0];
  }
}

// dots[k] = sum over the blocks of partial[3 * block + k], k < 3 (one block, one warp per sum).
__global__ void __launch_bounds__(kThreads) SumDotsKernel(const double* partial, unsigned blocks, double* dots) {
  __shared__ double sums[3][kThreads];
  for (unsigned k = 0; k < 3; ++k) {
    double local = 0;
    for (unsigned j = threadIdx.x; j < blocks; j += kThreads) local += partial[3 * j + k];
    sums[k][threadIdx.x] = local;
  }
  __syncthreads();
  for (unsigned half = kThreads / 2; half > 0; half /= 2) {
    if (threadIdx.x < half)
      for (unsigned k = 0; k < 3; ++k) sums[k][threadIdx.x] += sums[k][threadIdx.x + half];
    __syncthreads();
  }
  if (threadIdx.x < 3) dots[threadIdx.x] = sums[threadIdx.x][0];
}

// The coefficient of `a` in Adasum(a, b), as merge/adasum.cc: a (numerically) zero operand keeps
// its own scale, 1.
__device__ __forceinline__ double Coefficient(double ab, double aa) { return aa >= DBL_MIN ? 1.0 - ab / (2.0 * aa) : 1.0; }

// coefficients[2t], [2t + 1]: those of a and b in tensor t, from dots[3t .. 3t + 2].
__global__ void __launch_bounds__(kThreads)
    CoefficientsKernel(const double* dots, size_t tensors, float* coefficients) {
  for (size_t t = threadIdx.x; t < tensors; t += blockDim.x) {
    const double ab = dots[3 * t], aa = dots[3 * t + 1], bb = dots[3 * t + 2];
    coefficients[2 * t] = float(Coefficient(ab, aa));
    coefficients[2 * t + 1] = float(Coefficient(ab, bb));
  }
}

__global__ void __launch_bounds__(kThreads) CombineKernel(float* a, const float* b, size_t n, const float* coefficients) {
  const float ca = coefficients[0], cb = coefficients[1];
  for (size_t j = size_t(blockIdx.x) * blockDim.x + threadIdx.x; j < n; j += size_t(gridDim.x) * blockDim.x)
    a[j] = ca * a[j] + cb * b[j];
}

// values: Adasum's result D in, the next start out; w and w_p advance (merge/adasum_merger.cc's
// rule, value for value).
__global__ void __launch_bounds__(kThreads)
    UpdateKernel(float* values, float* current, float* previous, size_t n, float gamma, bool nesterov) {
  for (size_t j = size_t(blockIdx.x) * blockDim.x + threadIdx.x; j < n; j += size_t(gridDim.x) * blockDim.x) {
    const float w = current[j];
    if (nesterov) {
      const float next = Start(w, previous[j], gamma, true) + values[j];
      values[j] = Start(next, w, gamma, true);
      current[j] = next;
    } else {
      const float next = w + values[j] + gamma * (w - previous[j]);
      values[j] = next;
      current[j] = next;
    }
    previous[j] = w;
  }
}

// [begin, end) of piece `index` of `count` near-equal pieces of [0, n).
std::pair<size_t, size_t> Piece(size_t n, size_t index, size_t count) {
  return {n * index / count, n * (index + 1) / count};
}

}  // namespace

struct DeviceAdasum::Impl {
  struct Gpu {
    int ordinal = 0;
    std::vector<size_t> replicas;  // indices into `replicas`, ascending; the first receives the result
    Stream stream;
    Event event;                     // re-recorded after each phase; waits take the latest record
    DeviceBuffer<float> received;    // a right operand from another GPU (only on such pairs' left GPUs)
    DeviceBuffer<double> partial;    // the dots' per-block sums
    DeviceBuffer<double> dots;       // a.b, |a|^2, |b|^2 per tensor
    DeviceBuffer<float> coefficients;  // two per tensor
    DeviceBuffer<float> current, previous;  // w and w_p, whole
    DeviceBuffer<unsigned long long> non_finite;
    PinnedBuffer<unsigned long long> non_finite_host;
  };

  std::vector<GpuReplica> replicas;
  size_t count = 0;
  std::vector<size_t> bounds;  // tensor t spans [bounds[t], bounds[t + 1])
  DeviceMomentum momentum;
  std::vector<std::vector<merge::TreePair>> levels;
  std::vector<size_t> gpu_of;  // replica -> index into `gpus`
  std::vector<Gpu> gpus;       // in order of first appearance
  bool peer_access = true;
  bool global_set = false;

  size_t tensors() const { return bounds.size() - 1; }
  float* First(Gpu& gpu) { return replicas[gpu.replicas.front()].params; }

  void EnablePeerAccess(int from, int to);
  void Deltas(Gpu& gpu);  // records the GPU's event
  void Combine(size_t left, size_t right);
  void Broadcast();
  void Update(Gpu& gpu);
};

void DeviceAdasum::Impl::EnablePeerAccess(int from, int to) {
  for (auto [device, peer] : {std::pair{from, to}, std::pair{to, from}}) {
    int can = 0;
    XMLT_CUDA_CHECK(cudaDeviceCanAccessPeer(&can, device, peer));
    if (!can) {
      peer_access = false;
      continue;
    }
    DeviceGuard guard(device);
    const cudaError_t status = cudaDeviceEnablePeerAccess(peer, 0);
    if (status == cudaErrorPeerAccessAlreadyEnabled) {
      cudaGetLastError();  // enabled by an earlier pair or collective: fine
    } else {
      XMLT_CUDA_CHECK(status);
    }
  }
}

void DeviceAdasum::Impl::Deltas(Gpu& gpu) {
  DeviceGuard guard(gpu.ordinal);
  const cudaStream_t stream = gpu.stream.get();
  for (const size_t i : gpu.replicas) {
    // The replica read and written, w read; w_p only by Nesterov's look-ahead (its sole use).
    XMLT_SIM_KERNEL_BYTES(count * sizeof(float) * (momentum.nesterov ? 4 : 3));
    XMLT_LAUNCH(DeltaKernel, BlocksFor(count), kThreads, 0, stream)(replicas[i].params, gpu.current.data(),
                                                                   gpu.previous.data(), count,
                                                                   float(momentum.gamma), momentum.nesterov);
    XMLT_CUDA_CHECK_LAUNCH();
  }
  gpu.event.Record(stream);
}

// Replica `right` into replica `left`, on the left one's GPU: the right operand pulled over first
// when it lives elsewhere, then per tensor the dots, all coefficients at once, the combination.
void DeviceAdasum::Impl::Combine(size_t left, size_t right) {
  Gpu& to = gpus[gpu_of[left]];
  Gpu& from = gpus[gpu_of[right]];
  DeviceGuard guard(to.ordinal);
  const cudaStream_t stream = to.stream.get();
  float* a = replicas[left].params;
  const float* b = replicas[right].params;
  if (&to != &from) {
    XMLT_CUDA_CHECK(cudaStreamWaitEvent(stream, from.event.get(), 0));
    XMLT_CUDA_CHECK(cudaMemcpyPeerAsync(to.received.data(), to.ordinal, b, from.ordinal, count * sizeof(float), stream));
    b = to.received.data();
  }
  for (size_t t = 0; t < tensors(); ++t) {
    const size_t begin = bounds[t], n = bounds[t + 1] - begin;
    const unsigned blocks = BlocksFor(n);  // an empty tensor still writes its zero dots
    XMLT_SIM_KERNEL_BYTES(2 * n * sizeof(float) + 3 * blocks * sizeof(double));  // a, b; 3 doubles a block
    XMLT_LAUNCH(DotsKernel, blocks, kThreads, 0, stream)(a + begin, b + begin, n, to.partial.data());
    XMLT_CUDA_CHECK_LAUNCH();
    XMLT_SIM_KERNEL_BYTES(3 * (blocks + 1) * sizeof(double));  // the blocks' sums read, the tensor's 3 written
    XMLT_LAUNCH(SumDotsKernel, 1, kThreads, 0, stream)(to.partial.data(), blocks, to.dots.data() + 3 * t);
    XMLT_CUDA_CHECK_LAUNCH();
  }
  XMLT_SIM_KERNEL_BYTES(tensors() * (3 * sizeof(double) + 2 * sizeof(float)));  // 3 dots in, 2 coefficients out
  XMLT_LAUNCH(CoefficientsKernel, 1, kThreads, 0, stream)(to.dots.data(), tensors(), to.coefficients.data());
  XMLT_CUDA_CHECK_LAUNCH();
  for (size_t t = 0; t < tensors(); ++t) {
    const size_t begin = bounds[t], n = bounds[t + 1] - begin;
    if (n == 0) continue;
    XMLT_SIM_KERNEL_BYTES(3 * n * sizeof(float) + 2 * sizeof(float));  // a read and written, b, the coefficients
    XMLT_LAUNCH(CombineKernel, BlocksFor(n), kThreads, 0, stream)(a + begin, b + begin, n,
                                                                  to.coefficients.data() + 2 * t);
    XMLT_CUDA_CHECK_LAUNCH();
  }
}

// The root's result down a binomial tree of the GPUs, into each GPU's first replica. Each copy
// runs on its sender's stream, before the sender's own update overwrites the result; the receiver
// waits for it. The receiver's first replica is free: every delta fed the root's result.
void DeviceAdasum::Impl::Broadcast() {
  const size_t n = gpus.size();
  for (size_t step = 1; step < n; step *= 2) {
    for (size_t k = 0; k < step && k + step < n; ++k) {
      Gpu& from = gpus[k];
      Gpu& to = gpus[k + step];
      {
        DeviceGuard guard(from.ordinal);
        XMLT_CUDA_CHECK(cudaMemcpyPeerAsync(First(to), to.ordinal, First(from), from.ordinal, count * sizeof(float),
                                            from.stream.get()));
        from.event.Record(from.stream.get());
      }
      DeviceGuard guard(to.ordinal);
      XMLT_CUDA_CHECK(cudaStreamWaitEvent(to.stream.get(), from.event.get(), 0));
    }
  }
}

// The momentum rule on this GPU's copy of w and w_p, the next start into its first replica and
// from there into the others.
void DeviceAdasum::Impl::Update(Gpu& gpu) {
  DeviceGuard guard(gpu.ordinal);
  const cudaStream_t stream = gpu.stream.get();
  float* const result = First(gpu);
  XMLT_SIM_KERNEL_BYTES(6 * count * sizeof(float));  // D in and the start out, w and w_p each read and written
  XMLT_LAUNCH(UpdateKernel, BlocksFor(count), kThreads, 0, stream)(result, gpu.current.data(), gpu.previous.data(),
                                                                  count, float(momentum.gamma), momentum.nesterov);
  XMLT_CUDA_CHECK_LAUNCH();
  for (size_t r = 1; r < gpu.replicas.size(); ++r)
    XMLT_CUDA_CHECK(cudaMemcpyAsync(replicas[gpu.replicas[r]].params, result, count * sizeof(float),
                                    cudaMemcpyDeviceToDevice, stream));
}

DeviceAdasum::DeviceAdasum(std::vector<GpuReplica> replicas, size_t count, std::vector<size_t> tensors,
                           DeviceMomentum momentum)
    : impl_(std::make_unique<Impl>()) {
  if (replicas.empty()) throw std::invalid_argument("DeviceAdasum: no replicas");
  Impl& m = *impl_;
  m.replicas = std::move(replicas);
  m.count = count;
  m.momentum = momentum;
  m.bounds = std::move(tensors);
  if (m.bounds.empty()) m.bounds.push_back(0);
  if (m.bounds[0] != 0) throw std::invalid_argument("DeviceAdasum: the first tensor must start at 0");
  for (size_t t = 1; t < m.bounds.size(); ++t)
    if (m.bounds[t] < m.bounds[t - 1] || m.bounds[t] > count)
      throw std::invalid_argument("DeviceAdasum: tensor offset " + std::to_string(m.bounds[t]) +
                                  " is not ascending within " + std::to_string(count) + " parameters");
  m.bounds.push_back(count);
  for (size_t i = 0; i < m.replicas.size(); ++i) {
    if (m.replicas[i].params == nullptr && count > 0)
      throw std::invalid_argument("DeviceAdasum: replica " + std::to_string(i) + " has no parameters");
    auto it = std::find_if(m.gpus.begin(), m.gpus.end(),
                           [&](const Impl::Gpu& g) { return g.ordinal == m.replicas[i].gpu; });
    if (it == m.gpus.end()) {
      DeviceGuard guard(m.replicas[i].gpu);
      m.gpus.emplace_back();
      m.gpus.back().ordinal = m.replicas[i].gpu;
      it = m.gpus.end() - 1;
    }
    it->replicas.push_back(i);
    m.gpu_of.push_back(size_t(it - m.gpus.begin()));
  }
  m.levels = merge::PairwiseTreeLevels(m.replicas.size());
  std::vector<bool> receives(m.gpus.size(), false);
  for (const auto& level : m.levels)
    for (const merge::TreePair& pair : level) {
      const size_t to = m.gpu_of[pair.left], from = m.gpu_of[pair.right];
      if (to == from) continue;
      receives[to] = true;
      m.EnablePeerAccess(m.gpus[to].ordinal, m.gpus[from].ordinal);
    }
  for (size_t step = 1; step < m.gpus.size(); step *= 2)
    for (size_t k = 0; k < step && k + step < m.gpus.size(); ++k)
      m.EnablePeerAccess(m.gpus[k].ordinal, m.gpus[k + step].ordinal);
  for (size_t g = 0; g < m.gpus.size(); ++g) {
    Impl::Gpu& gpu = m.gpus[g];
    DeviceGuard guard(gpu.ordinal);
    if (receives[g]) gpu.received = DeviceBuffer<float>(count);
    gpu.partial = DeviceBuffer<double>(3 * kMaxBlocks);
    gpu.dots = DeviceBuffer<double>(3 * m.tensors());
    gpu.coefficients = DeviceBuffer<float>(2 * m.tensors());
    gpu.non_finite = DeviceBuffer<unsigned long long>(1);
    gpu.non_finite_host = PinnedBuffer<unsigned long long>(1);
  }
}

DeviceAdasum::~DeviceAdasum() = default;

void DeviceAdasum::Merge() {
  Impl& m = *impl_;
  if (!m.global_set) throw std::logic_error("DeviceAdasum: the merge needs SetGlobalModel first");
  if (m.count == 0) return;
  // Every phase ends with each GPU recording its event: the next phase's copies wait for it.
  for (Impl::Gpu& gpu : m.gpus) m.Deltas(gpu);
  for (const auto& level : m.levels) {
    for (const merge::TreePair& pair : level) m.Combine(pair.left, pair.right);
    for (Impl::Gpu& gpu : m.gpus) {
      DeviceGuard guard(gpu.ordinal);
      gpu.event.Record(gpu.stream.get());
    }
  }
  m.Broadcast();
  for (Impl::Gpu& gpu : m.gpus) m.Update(gpu);
  // Receivers first: where streams run only when waited for (the simulated GPUs), a missing wait
  // for a sender then leaves stale values instead of being covered by the sender's earlier sync.
  for (auto gpu = m.gpus.rbegin(); gpu != m.gpus.rend(); ++gpu) gpu->stream.Synchronize();
}

void DeviceAdasum::SetGlobalModel(const float* current, const float* previous) {
  Impl& m = *impl_;
  for (Impl::Gpu& gpu : m.gpus) {
    DeviceGuard guard(gpu.ordinal);
    if (gpu.current.size() != m.count) {
      gpu.current = DeviceBuffer<float>(m.count);
      gpu.previous = DeviceBuffer<float>(m.count);
    }
    if (m.count == 0) continue;
    XMLT_CUDA_CHECK(cudaMemcpy(gpu.current.data(), current, m.count * sizeof(float), cudaMemcpyHostToDevice));
    XMLT_CUDA_CHECK(cudaMemcpy(gpu.previous.data(), previous, m.count * sizeof(float), cudaMemcpyHostToDevice));
  }
  m.global_set = true;
}

void DeviceAdasum::GetGlobalModel(float* current, float* previous) {
  Impl& m = *impl_;
  if (!m.global_set) throw std::logic_error("DeviceAdasum: no global model was set");
  if (m.count == 0) return;
  Impl::Gpu& gpu = m.gpus.front();  // every GPU holds the same bits
  DeviceGuard guard(gpu.ordinal);
  XMLT_CUDA_CHECK(cudaMemcpy(current, gpu.current.data(), m.count * sizeof(float), cudaMemcpyDeviceToHost));
  XMLT_CUDA_CHECK(cudaMemcpy(previous, gpu.previous.data(), m.count * sizeof(float), cudaMemcpyDeviceToHost));
}

bool DeviceAdasum::GlobalModelFinite() {
  Impl& m = *impl_;
  if (!m.global_set) throw std::logic_error("DeviceAdasum: no global model was set");
  for (size_t g = 0; g < m.gpus.size(); ++g) {
    Impl::Gpu& gpu = m.gpus[g];
    DeviceGuard guard(gpu.ordinal);
    const cudaStream_t stream = gpu.stream.get();
    const auto [begin, end] = Piece(m.count, g, m.gpus.size());
    XMLT_CUDA_CHECK(cudaMemsetAsync(gpu.non_finite.data(), 0, sizeof(unsigned long long), stream));
    LaunchCountNonFinite(stream, gpu.current.data() + begin, end - begin, gpu.non_finite.data());
    XMLT_CUDA_CHECK(cudaMemcpyAsync(gpu.non_finite_host.data(), gpu.non_finite.data(), sizeof(unsigned long long),
                                    cudaMemcpyDeviceToHost, stream));
  }
  bool finite = true;
  for (Impl::Gpu& gpu : m.gpus) {
    gpu.stream.Synchronize();
    finite = finite && gpu.non_finite_host.data()[0] == 0;
  }
  return finite;
}

size_t DeviceAdasum::gpus() const { return impl_->gpus.size(); }
bool DeviceAdasum::peer_access() const { return impl_->peer_access; }

}  // namespace xmlt::kernels::cuda
