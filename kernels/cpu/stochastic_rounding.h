// The optimizer state and the weights kept in bfloat16 (--optimizer-state bf16, --weights bf16):
// the step computes in fp32 and stores its result rounded stochastically, up with probability
// equal to the fraction of a bf16 step the value is past the lower neighbour. Round-to-nearest
// would drop every update smaller than half a bf16 step (a momentum that decays by 0.9 a step,
// squares that grow by g^2, a weight's step of lr x g); the stochastic rounding keeps them in
// expectation.
//
// The noise is a hash of (key, index): the caller makes the key from the run's seed, the device
// and its step count, and passes each value's offset in the state, so a resumed run rounds as the
// uninterrupted one would. The functions are always inline: vector_kernels_body.h compiles them
// once per ISA and must not call an out-of-line copy built for another. CUDA kernels call them too
// (kernels/cuda/bf16_state_math.cuh), so a GPU rounds as the CPU does.
#pragma once

#include <cstdint>
#include <cstring>

#if defined(__CUDACC__)
#define XMLT_ROUNDING_FN __host__ __device__ __forceinline__
#else
#define XMLT_ROUNDING_FN [[gnu::always_inline]] inline
#endif

namespace xmlt::kernels::cpu {

// A float's bits and back (device code has intrinsics for it; memcpy elsewhere).
XMLT_ROUNDING_FN uint32_t FloatBits(float value) {
#if defined(__CUDA_ARCH__)
  return __float_as_uint(value);
#else
  uint32_t bits;
  std::memcpy(&bits, &value, sizeof bits);
  return bits;
#endif
}

XMLT_ROUNDING_FN float BitsFloat(uint32_t bits) {
#if defined(__CUDA_ARCH__)
  return __uint_as_float(bits);
#else
  float value;
  std::memcpy(&value, &bits, sizeof value);
  return value;
#endif
}

// 16 bits of noise for value `index` of a step's state (murmur3's 32-bit finalizer: 32-bit
// multiplies, which vectorize on AVX2 and AVX-512 alike).
XMLT_ROUNDING_FN uint32_t RoundingNoise(uint32_t key, uint64_t index) {
  uint32_t x = key ^ uint32_t(index) ^ (uint32_t(index >> 32) * 0x9e3779b9u);
  x ^= x >> 16;
  x *= 0x85ebca6bu;
  x ^= x >> 13;
  x *= 0xc2b2ae35u;
  x ^= x >> 16;
  return x & 0xffffu;
}

// `value` rounded to one of its two bf16 neighbours: the noise (below 2^16) is added to the bits
// the bf16 drops, and a carry takes the value up. An infinity stays itself, a NaN stays a NaN.
XMLT_ROUNDING_FN uint16_t StochasticBf16(float value, uint32_t noise) {
  const uint32_t bits = FloatBits(value);
  const bool special = (bits & 0x7f800000u) == 0x7f800000u;
  const uint32_t rounded = bits + noise;
  // An infinity has no low bits to lose; a NaN keeps a mantissa bit set.
  return uint16_t(special ? (bits >> 16) | ((bits & 0xffffu) != 0 ? 0x0040u : 0u) : rounded >> 16);
}

// `value` rounded to its nearest bf16, ties to even; a NaN stays a NaN (bf16_gemm.h's FloatToBf16,
// inline for the merges' loops).
XMLT_ROUNDING_FN uint16_t NearestBf16(float value) {
  const uint32_t bits = FloatBits(value);
  const bool nan = (bits & 0x7f800000u) == 0x7f800000u && (bits & 0x007fffffu) != 0;
  return uint16_t(nan ? (bits >> 16) | 0x0040u : (bits + 0x7fffu + ((bits >> 16) & 1u)) >> 16);
}

XMLT_ROUNDING_FN float WidenBf16(uint16_t value) { return BitsFloat(uint32_t(value) << 16); }

}  // namespace xmlt::kernels::cpu
