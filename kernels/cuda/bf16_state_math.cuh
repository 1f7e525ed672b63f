// The optimizer state kept in bfloat16 on the GPU (--optimizer-state bf16 under --math bf16): each
// value steps in fp32 and is stored rounded stochastically with the noise of (key, its offset in
// the state), through kernels/cpu/stochastic_rounding.h's own functions, so a GPU rounds as the
// CPU's dense step does (tests/kernels/cuda_bf16_state_test.cc).
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "kernels/cpu/stochastic_rounding.h"

namespace xmlt::kernels::cuda {

// One parameter's heavy-ball step with its velocity in bf16 (cpu's momentum_bf16): w takes the
// fp32 velocity, the state its stochastic rounding.
__device__ __forceinline__ void MomentumBf16Value(float* w, uint16_t* v, float g, float momentum, float lr,
                                                 uint32_t key, uint64_t index) {
  const float next = momentum * cpu::WidenBf16(*v) + g;
  *w -= lr * next;
  *v = cpu::StochasticBf16(next, cpu::RoundingNoise(key, index));
}

// One parameter's Adagrad step with its squares in bf16 (cpu's adagrad_bf16 with scale 1).
__device__ __forceinline__ void AdagradBf16Value(float* w, uint16_t* squares, float g, float lr, float epsilon,
                                                uint32_t key, uint64_t index) {
  const float sum = cpu::WidenBf16(*squares) + g * g;
  *w -= lr * g / (sqrtf(sum) + epsilon);
  *squares = cpu::StochasticBf16(sum, cpu::RoundingNoise(key, index));
}

}  // namespace xmlt::kernels::cuda
