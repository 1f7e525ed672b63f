// The element-wise kernels of the device merges; see replica_kernels.h.
#include "merge/gpu/replica_kernels.h"

#include <algorithm>

#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/launch.h"

namespace xmlt::merge::gpu {
namespace {

constexpr unsigned kThreads = 256;

unsigned BlocksFor(size_t count) {
  return unsigned(std::clamp<size_t>((count + kThreads - 1) / kThreads, 1, kSquaresScratch));
}

__global__ void __launch_bounds__(kThreads)
    WeightedSumKernel(float* acc, size_t offset, size_t n, WeightedTerms terms, bool accumulate) {
  for (size_t j = size_t(blockIdx.x) * blockDim.x + threadIdx.x; j < n; j += size_t(gridDim.x) * blockDim.x) {
    float v = accumulate ? acc[offset + j] : 0.0f;
    for (int t = 0; t < terms.count; ++t) v += terms.weight[t] * terms.params[t][offset + j];
    acc[offset + j] = v;
  }
}

// merge/global_momentum.cc's rule, value for value.
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

__global__ void __launch_bounds__(kThreads)
    CountNonFiniteKernel(const float* values, size_t n, unsigned long long* count) {
  __shared__ unsigned long long counts[kThreads];
  unsigned long long local = 0;
  for (size_t j = size_t(blockIdx.x) * blockDim.x + threadIdx.x; j < n; j += size_t(gridDim.x) * blockDim.x)
    local += isfinite(values[j]) ? 0 : 1;
  counts[threadIdx.x] = local;
  __syncthreads();
  for (unsigned half = kThreads / 2; half > 0; half /= 2) {
    if (threadIdx.x < half) counts[threadIdx.x] += counts[threadIdx.x + half];
    __syncthreads();
  }
  if (threadIdx.x == 0 && counts[0] > 0) atomicAdd(count, counts[0]);
}

}  // namespace

void LaunchWeightedSum(cudaStream_t stream, float* acc, size_t offset, size_t n, const WeightedTerms& terms,
                       bool accumulate) {
  if (n == 0) return;
  XMLT_SIM_KERNEL_BYTES(n * sizeof(float) * (size_t(terms.count) + (accumulate ? 2 : 1)));
  XMLT_LAUNCH(WeightedSumKernel, BlocksFor(n), kThreads, 0, stream)(acc, offset, n, terms, accumulate);
  XMLT_CUDA_CHECK_LAUNCH();
}

void LaunchWeightedSumOfReplicas(cudaStream_t stream, float* acc, size_t offset, size_t n,
                                 const std::vector<base::ReplicaParams>& replicas,
                                 const std::vector<size_t>& chosen, const std::vector<double>& weights) {
  for (size_t first = 0; first < chosen.size() && n > 0; first += kTermsPerPass) {
    WeightedTerms terms{};
    terms.count = int(std::min<size_t>(kTermsPerPass, chosen.size() - first));
    for (int t = 0; t < terms.count; ++t) {
      const size_t i = chosen[first + size_t(t)];
      terms.params[t] = replicas[i].params;
      terms.weight[t] = float(weights[i]);
    }
    LaunchWeightedSum(stream, acc, offset, n, terms, first > 0);
  }
}

void LaunchAdd(cudaStream_t stream, float* acc, const float* received, size_t n) {
  if (n == 0) return;
  XMLT_SIM_KERNEL_BYTES(3 * n * sizeof(float));
  XMLT_LAUNCH(AddKernel, BlocksFor(n), kThreads, 0, stream)(acc, received, n);
  XMLT_CUDA_CHECK_LAUNCH();
}

void LaunchMomentum(cudaStream_t stream, float* values, float* current, float* previous, size_t n,
                    const DeviceMomentum& momentum) {
  if (n == 0) return;
  XMLT_SIM_KERNEL_BYTES(6 * n * sizeof(float));  // values, w and w_p, each read and written
  XMLT_LAUNCH(MomentumKernel, BlocksFor(n), kThreads, 0, stream)(values, current, previous, n,
                                                                 float(momentum.gamma), momentum.nesterov);
  XMLT_CUDA_CHECK_LAUNCH();
}

void LaunchSquaredNorm(cudaStream_t stream, const float* params, size_t n, double* partial, double* total) {
  const unsigned blocks = BlocksFor(n);
  XMLT_SIM_KERNEL_BYTES(n * sizeof(float) + blocks * sizeof(double));
  XMLT_LAUNCH(SquaresKernel, blocks, kThreads, 0, stream)(params, n, partial);
  XMLT_CUDA_CHECK_LAUNCH();
  XMLT_SIM_KERNEL_BYTES((blocks + 1) * sizeof(double));
  XMLT_LAUNCH(SumKernel, 1, kThreads, 0, stream)(partial, blocks, total);
  XMLT_CUDA_CHECK_LAUNCH();
}

void LaunchCountNonFinite(cudaStream_t stream, const float* values, size_t n, unsigned long long* count) {
  if (n == 0) return;
  XMLT_SIM_KERNEL_BYTES(n * sizeof(float));
  XMLT_LAUNCH(CountNonFiniteKernel, BlocksFor(n), kThreads, 0, stream)(values, n, count);
  XMLT_CUDA_CHECK_LAUNCH();
}

}  // namespace xmlt::merge::gpu
