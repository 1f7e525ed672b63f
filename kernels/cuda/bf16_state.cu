// The bf16 state's block updates on the GPU; see bf16_state.h.
#include "kernels/cuda/bf16_state.h"

#include <algorithm>

#include "kernels/cuda/bf16_state_math.cuh"
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/launch.h"

namespace xmlt::kernels::cuda {
namespace {

constexpr unsigned kThreads = 256;
constexpr uint64_t kMaxBlocks = 1u << 16;

unsigned BlocksFor(uint64_t count) {
  return unsigned(std::max<uint64_t>(1, std::min<uint64_t>((count + kThreads - 1) / kThreads, kMaxBlocks)));
}

__global__ void MomentumStepBf16Kernel(float* w, uint16_t* velocity, const float* g, float momentum, float lr,
                                       uint64_t n, uint32_t key, uint64_t index) {
  for (uint64_t j = blockIdx.x * uint64_t(blockDim.x) + threadIdx.x; j < n; j += uint64_t(gridDim.x) * blockDim.x)
    MomentumBf16Value(w + j, velocity + j, g[j], momentum, lr, key, index + j);
}

__global__ void AdagradStepBf16Kernel(float* w, uint16_t* squares, const float* g, float lr, float epsilon,
                                      uint64_t n, uint32_t key, uint64_t index) {
  for (uint64_t j = blockIdx.x * uint64_t(blockDim.x) + threadIdx.x; j < n; j += uint64_t(gridDim.x) * blockDim.x)
    AdagradBf16Value(w + j, squares + j, g[j], lr, epsilon, key, index + j);
}

}  // namespace

void MomentumStepBf16(cudaStream_t stream, float* w, uint16_t* velocity, const float* g, float momentum, float lr,
                      uint64_t n, uint32_t key, uint64_t index) {
  if (n == 0) return;
  XMLT_LAUNCH(MomentumStepBf16Kernel, BlocksFor(n), kThreads, 0, stream)(w, velocity, g, momentum, lr, n, key, index);
  XMLT_CUDA_CHECK_LAUNCH();
}

void AdagradStepBf16(cudaStream_t stream, float* w, uint16_t* squares, const float* g, float lr, float epsilon,
                     uint64_t n, uint32_t key, uint64_t index) {
  if (n == 0) return;
  XMLT_LAUNCH(AdagradStepBf16Kernel, BlocksFor(n), kThreads, 0, stream)(w, squares, g, lr, epsilon, n, key, index);
  XMLT_CUDA_CHECK_LAUNCH();
}

}  // namespace xmlt::kernels::cuda
