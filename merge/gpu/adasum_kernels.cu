// The Adasum merge's kernels on the GPUs; see adasum_kernels.h.
#include "merge/gpu/adasum_kernels.h"

#include <algorithm>

#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/launch.h"
#include "merge/adasum.h"

namespace xmlt::merge::gpu {
namespace {

constexpr unsigned kThreads = 256;
// Enough blocks to fill a GPU; the loops stride over larger tensors. Bounds the dots' scratch.
constexpr unsigned kMaxBlocks = kAdasumDotsScratch / 3;

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

// out[j] = ca a[j] + cb b[j]; out is a or b (element-wise, so in place is fine).
__global__ void __launch_bounds__(kThreads)
    CombineKernel(float* out, const float* a, const float* b, size_t n, const float* coefficients) {
  const float ca = coefficients[0], cb = coefficients[1];
  for (size_t j = size_t(blockIdx.x) * blockDim.x + threadIdx.x; j < n; j += size_t(gridDim.x) * blockDim.x)
    out[j] = ca * a[j] + cb * b[j];
}

// sum: Adasum's result D in; start: the next start out (may be sum); w and w_p advance
// (merge/adasum_merger.cc's rule, value for value).
__global__ void __launch_bounds__(kThreads) UpdateKernel(const float* sum, float* start, float* current,
                                                         float* previous, size_t n, float gamma, bool nesterov) {
  for (size_t j = size_t(blockIdx.x) * blockDim.x + threadIdx.x; j < n; j += size_t(gridDim.x) * blockDim.x) {
    const float w = current[j], d = sum[j];
    if (nesterov) {
      const float next = Start(w, previous[j], gamma, true) + d;
      start[j] = Start(next, w, gamma, true);
      current[j] = next;
    } else {
      const float next = w + d + gamma * (w - previous[j]);
      start[j] = next;
      current[j] = next;
    }
    previous[j] = w;
  }
}

// coefficients[2t], [2t + 1]: those of a and b in tensor t, from the `members` rows of the group's
// partial dots (row k: 3 doubles per tensor), summed in row order: every member of a group sums
// the same rows in the same order and gets the same bits.
__global__ void __launch_bounds__(kThreads)
    GroupCoefficientsKernel(const double* rows, size_t members, size_t tensors, float* coefficients) {
  for (size_t t = threadIdx.x; t < tensors; t += blockDim.x) {
    double ab = 0, aa = 0, bb = 0;
    for (size_t k = 0; k < members; ++k) {
      ab += rows[3 * (k * tensors + t)];
      aa += rows[3 * (k * tensors + t) + 1];
      bb += rows[3 * (k * tensors + t) + 2];
    }
    coefficients[2 * t] = float(merge::AdasumCoefficient(ab, aa));
    coefficients[2 * t + 1] = float(merge::AdasumCoefficient(ab, bb));
  }
}

}  // namespace

void LaunchAdasumDeltas(cudaStream_t stream, float* params, const float* current, const float* previous, size_t n,
                        const DeviceMomentum& momentum) {
  // The replica read and written, w read; w_p only by Nesterov's look-ahead (its sole use).
  XMLT_SIM_KERNEL_BYTES(n * sizeof(float) * (momentum.nesterov ? 4 : 3));
  XMLT_LAUNCH(DeltaKernel, BlocksFor(n), kThreads, 0, stream)(params, current, previous, n, float(momentum.gamma),
                                                              momentum.nesterov);
  XMLT_CUDA_CHECK_LAUNCH();
}

void LaunchAdasumDots(cudaStream_t stream, const float* a, const float* b, size_t n, double* partial, double* dots) {
  const unsigned blocks = BlocksFor(n);  // an empty range still writes its zero dots
  XMLT_SIM_KERNEL_BYTES(2 * n * sizeof(float) + 3 * blocks * sizeof(double));
  XMLT_LAUNCH(DotsKernel, blocks, kThreads, 0, stream)(a, b, n, partial);
  XMLT_CUDA_CHECK_LAUNCH();
  XMLT_SIM_KERNEL_BYTES(3 * (blocks + 1) * sizeof(double));  // the blocks' sums read, the 3 dots written
  XMLT_LAUNCH(SumDotsKernel, 1, kThreads, 0, stream)(partial, blocks, dots);
  XMLT_CUDA_CHECK_LAUNCH();
}

void LaunchAdasumCoefficients(cudaStream_t stream, const double* rows, size_t members, size_t tensors,
                              float* coefficients) {
  XMLT_SIM_KERNEL_BYTES(members * 3 * tensors * sizeof(double) + 2 * tensors * sizeof(float));
  XMLT_LAUNCH(GroupCoefficientsKernel, 1, kThreads, 0, stream)(rows, members, tensors, coefficients);
  XMLT_CUDA_CHECK_LAUNCH();
}

void LaunchAdasumCombine(cudaStream_t stream, float* out, const float* a, const float* b, size_t n,
                         const float* coefficients) {
  XMLT_SIM_KERNEL_BYTES(3 * n * sizeof(float) + 2 * sizeof(float));  // a, b, the result; coefficients
  XMLT_LAUNCH(CombineKernel, BlocksFor(n), kThreads, 0, stream)(out, a, b, n, coefficients);
  XMLT_CUDA_CHECK_LAUNCH();
}

void LaunchAdasumUpdate(cudaStream_t stream, const float* sum, float* start, float* current, float* previous, size_t n,
                        const DeviceMomentum& momentum) {
  XMLT_SIM_KERNEL_BYTES(6 * n * sizeof(float));  // D in and the start out, w and w_p each read and written
  XMLT_LAUNCH(UpdateKernel, BlocksFor(n), kThreads, 0, stream)(sum, start, current, previous, n,
                                                               float(momentum.gamma), momentum.nesterov);
  XMLT_CUDA_CHECK_LAUNCH();
}

}  // namespace xmlt::merge::gpu
