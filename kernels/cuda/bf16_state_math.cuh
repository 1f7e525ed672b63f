// The optimizer state kept in bfloat16 on the GPU (--optimizer-state bf16 under --math bf16): the
// device side of kernels/cpu/stochastic_rounding.h, the same arithmetic bit for bit (each value
// steps in fp32 and is stored rounded stochastically with the noise of (key, its offset in the
// state)), so a GPU rounds as the CPU's dense step does. Tested against it in
// tests/kernels/cuda/bf16_state_test.cc.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

namespace xmlt::kernels::cuda {

// 16 bits of noise for value `index` of a step's state: cpu::RoundingNoise.
__device__ __forceinline__ uint32_t Bf16RoundingNoise(uint32_t key, uint64_t index) {
  uint32_t x = key ^ uint32_t(index) ^ (uint32_t(index >> 32) * 0x9e3779b9u);
  x ^= x >> 16;
  x *= 0x85ebca6bu;
  x ^= x >> 13;
  x *= 0xc2b2ae35u;
  x ^= x >> 16;
  return x & 0xffffu;
}

// `value` rounded to one of its two bf16 neighbours by the noise: cpu::StochasticBf16.
__device__ __forceinline__ uint16_t StochasticBf16(float value, uint32_t noise) {
  const uint32_t bits = __float_as_uint(value);
  const bool special = (bits & 0x7f800000u) == 0x7f800000u;
  return uint16_t(special ? (bits >> 16) | ((bits & 0xffffu) != 0 ? 0x0040u : 0u) : (bits + noise) >> 16);
}

__device__ __forceinline__ float WidenBf16(uint16_t value) { return __uint_as_float(uint32_t(value) << 16); }

// One parameter's heavy-ball step with its velocity in bf16 (cpu's momentum_bf16): w takes the
// fp32 velocity, the state its stochastic rounding.
__device__ __forceinline__ void MomentumBf16Value(float* w, uint16_t* v, float g, float momentum, float lr,
                                                 uint32_t key, uint64_t index) {
  const float next = momentum * WidenBf16(*v) + g;
  *w -= lr * next;
  *v = StochasticBf16(next, Bf16RoundingNoise(key, index));
}

// One parameter's Adagrad step with its squares in bf16 (cpu's adagrad_bf16 with scale 1).
__device__ __forceinline__ void AdagradBf16Value(float* w, uint16_t* squares, float g, float lr, float epsilon,
                                                uint32_t key, uint64_t index) {
  const float sum = WidenBf16(*squares) + g * g;
  *w -= lr * g / (sqrtf(sum) + epsilon);
  *squares = StochasticBf16(sum, Bf16RoundingNoise(key, index));
}

}  // namespace xmlt::kernels::cuda
