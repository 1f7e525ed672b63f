// The bodies of vector_kernels.h, included once by each vector_kernels_<isa>.cc, which is compiled
// for its ISA and defines XMLT_VECTOR_KERNELS_NS and XMLT_VECTOR_KERNELS_TABLE first.
// Everything here is in that TU's own namespace and calls only always-inline code: an out-of-line
// copy of a shared inline function, compiled for AVX-512, could otherwise be the one the linker
// keeps for every caller, and stop the program on a CPU without AVX-512.
#include <cstdint>

#if defined(__SSE2__)
#include <immintrin.h>
#endif

#include "kernels/cpu/fast_exp.h"
#include "kernels/cpu/stochastic_rounding.h"
#include "kernels/cpu/vector_kernels.h"

namespace xmlt::kernels::cpu {
namespace XMLT_VECTOR_KERNELS_NS {
namespace {

// The max in independent lanes: one running max would chain every element on the previous.
constexpr uint64_t kLanes = 16;

float MaxOf(const float* z, uint64_t n) {
  float lanes[kLanes];
  for (uint64_t k = 0; k < kLanes; ++k) lanes[k] = -__builtin_inff();
  uint64_t j = 0;
  for (; j + kLanes <= n; j += kLanes) {
#pragma omp simd
    for (uint64_t k = 0; k < kLanes; ++k) lanes[k] = lanes[k] > z[j + k] ? lanes[k] : z[j + k];
  }
  for (uint64_t k = 0; j < n; ++j, ++k) lanes[k] = lanes[k] > z[j] ? lanes[k] : z[j];
  float max = lanes[0];
  for (uint64_t k = 1; k < kLanes; ++k) max = max > lanes[k] ? max : lanes[k];
  return max;
}

float ExpInPlace(float* z, float max, uint64_t n) {
  float sum = 0;
#pragma omp simd reduction(+ : sum)
  for (uint64_t j = 0; j < n; ++j) {
    z[j] = FastExp(z[j] - max);
    sum += z[j];
  }
  return sum;
}

void BiasExpInPlace(float* z, const float* bias, uint64_t n, float* max_out, float* sum_out) {
  float lanes[kLanes];
  for (uint64_t k = 0; k < kLanes; ++k) lanes[k] = -__builtin_inff();
  uint64_t j = 0;
  for (; j + kLanes <= n; j += kLanes) {
#pragma omp simd
    for (uint64_t k = 0; k < kLanes; ++k) {
      z[j + k] += bias[j + k];
      lanes[k] = lanes[k] > z[j + k] ? lanes[k] : z[j + k];
    }
  }
  for (uint64_t k = 0; j < n; ++j, ++k) {
    z[j] += bias[j];
    lanes[k] = lanes[k] > z[j] ? lanes[k] : z[j];
  }
  float max = lanes[0];
  for (uint64_t k = 1; k < kLanes; ++k) max = max > lanes[k] ? max : lanes[k];
  *max_out = max;
  *sum_out = ExpInPlace(z, max, n);
}

// Stores 64 floats (a multiple of every ISA's vector) to a 64-byte aligned dst, bypassing the
// caches where the ISA can: a plain store to a cold line reads it in first.
constexpr uint64_t kStreamChunk = 64;
[[gnu::always_inline]] inline void StreamChunk(float* dst, const float* src) {
#if defined(__AVX512F__)
  for (uint64_t k = 0; k < kStreamChunk; k += 16) _mm512_stream_ps(dst + k, _mm512_loadu_ps(src + k));
#elif defined(__AVX__)
  for (uint64_t k = 0; k < kStreamChunk; k += 8) _mm256_stream_ps(dst + k, _mm256_loadu_ps(src + k));
#elif defined(__SSE2__)
  for (uint64_t k = 0; k < kStreamChunk; k += 4) _mm_stream_ps(dst + k, _mm_loadu_ps(src + k));
#else
  for (uint64_t k = 0; k < kStreamChunk; ++k) dst[k] = src[k];
#endif
}

// A vector register's worth of floats of this TU's ISA as one value, which GCC keeps in a register
// where a float array carried across loop iterations went through the stack. Wider than the
// ISA's registers, GCC lowers its selects to scalar code, so its width follows the ISA.
#if defined(__AVX512F__)
constexpr uint64_t kVectorFloats = 16;
#elif defined(__AVX__)
constexpr uint64_t kVectorFloats = 8;
#else
constexpr uint64_t kVectorFloats = 4;
#endif
typedef float Floats __attribute__((vector_size(kVectorFloats * sizeof(float))));

[[gnu::always_inline]] inline Floats LoadFloats(const float* p) {
  Floats v;
  __builtin_memcpy(&v, p, sizeof(v));
  return v;
}

// v with each lane swapped for the one `distance` lanes away (distance a power of 2).
[[gnu::always_inline]] inline Floats Partners(Floats v, int distance) {
  typedef int Ints __attribute__((vector_size(sizeof(Floats))));
  Ints mask;
  for (uint64_t k = 0; k < kVectorFloats; ++k) mask[k] = int(k) ^ distance;
  return __builtin_shuffle(v, mask);
}

// The max and the sum of the lanes by halving, in registers, in a fixed order.
[[gnu::always_inline]] inline float HorizontalMax(Floats v) {
  for (int distance = kVectorFloats / 2; distance >= 1; distance /= 2) {
    const Floats w = Partners(v, distance);
    v = v > w ? v : w;
  }
  return v[0];
}
[[gnu::always_inline]] inline float HorizontalSum(Floats v) {
  for (int distance = kVectorFloats / 2; distance >= 1; distance /= 2) v += Partners(v, distance);
  return v[0];
}

void BiasExpStream(const float* z, const float* bias, uint64_t n, float* dst, float* max_out, float* sum_out) {
  // The max in two independent vectors, so that each compare waits only on every other one.
  Floats lanes0 = Floats{} - __builtin_inff(), lanes1 = lanes0;
  uint64_t j = 0;
  for (; j + 2 * kVectorFloats <= n; j += 2 * kVectorFloats) {
    const Floats x0 = LoadFloats(z + j) + LoadFloats(bias + j);
    const Floats x1 = LoadFloats(z + j + kVectorFloats) + LoadFloats(bias + j + kVectorFloats);
    lanes0 = lanes0 > x0 ? lanes0 : x0;
    lanes1 = lanes1 > x1 ? lanes1 : x1;
  }
  float max = HorizontalMax(lanes0 > lanes1 ? lanes0 : lanes1);
  for (; j < n; ++j) {
    const float x = z[j] + bias[j];
    max = max > x ? max : x;
  }
  // Chunk by chunk through a buffer that stays in L1, out by streamed stores where dst is on a
  // cache line boundary (the caller fences them); the sum in lanes, in an order that depends on
  // n only, so that where dst lies changes no bit of it.
  Floats acc{};
  alignas(64) float chunk[kStreamChunk];
  const bool aligned = reinterpret_cast<uintptr_t>(dst) % 64 == 0;
  uint64_t i = 0;
  for (; i + kStreamChunk <= n; i += kStreamChunk) {
#pragma omp simd
    for (uint64_t k = 0; k < kStreamChunk; ++k) chunk[k] = FastExp(z[i + k] + bias[i + k] - max);
    // The chunk's vectors added pairwise, then to the running sum: one dependent add a chunk.
    constexpr uint64_t kParts = kStreamChunk / kVectorFloats;
    Floats part[kParts];
    for (uint64_t p = 0; p < kParts; ++p) part[p] = LoadFloats(chunk + p * kVectorFloats);
    for (uint64_t width = kParts / 2; width >= 1; width /= 2)
      for (uint64_t p = 0; p < width; ++p) part[p] = part[2 * p] + part[2 * p + 1];
    acc += part[0];
    if (aligned) {
      StreamChunk(dst + i, chunk);
    } else {
      __builtin_memcpy(dst + i, chunk, sizeof(chunk));
    }
  }
  float sum = HorizontalSum(acc);
  for (; i < n; ++i) {
    dst[i] = FastExp(z[i] + bias[i] - max);
    sum += dst[i];
  }
  *max_out = max;
  *sum_out = sum;
}

float ExpSum(const float* z, float max, uint64_t n) {
  float sum = 0;
#pragma omp simd reduction(+ : sum)
  for (uint64_t j = 0; j < n; ++j) sum += FastExp(z[j] - max);
  return sum;
}

void ScaledExp(float* dst, const float* z, float s, float max, uint64_t n) {
#pragma omp simd
  for (uint64_t j = 0; j < n; ++j) dst[j] = s * FastExp(z[j] - max);
}

void Scale(float* dst, const float* src, float f, uint64_t n) {
#pragma omp simd
  for (uint64_t j = 0; j < n; ++j) dst[j] = f * src[j];
}

void Add(float* __restrict sums, const float* __restrict x, uint64_t n) {
#pragma omp simd
  for (uint64_t j = 0; j < n; ++j) sums[j] += x[j];
}

void ScaleAdd(float* __restrict dst, const float* __restrict src, float f, float* __restrict sums, uint64_t n) {
#pragma omp simd
  for (uint64_t j = 0; j < n; ++j) {
    dst[j] = f * src[j];
    sums[j] += dst[j];
  }
}

void Sgd(float* __restrict w, const float* __restrict g, float lr, uint64_t n) {
#pragma omp simd
  for (uint64_t j = 0; j < n; ++j) w[j] -= lr * g[j];
}

void Momentum(float* __restrict w, float* __restrict v, const float* __restrict g, float momentum, float lr,
              uint64_t n) {
#pragma omp simd
  for (uint64_t j = 0; j < n; ++j) {
    v[j] = momentum * v[j] + g[j];
    w[j] -= lr * v[j];
  }
}

void Axpy(float* __restrict y, const float* __restrict x, float a, uint64_t n) {
#pragma omp simd
  for (uint64_t j = 0; j < n; ++j) y[j] += a * x[j];
}

// The square root vectorizes because these files are compiled with -fno-math-errno.
void Adagrad(float* __restrict w, float* __restrict squares, const float* __restrict d, float scale, float lr,
             float epsilon, uint64_t n) {
#pragma omp simd
  for (uint64_t j = 0; j < n; ++j) {
    const float g = scale * d[j];
    squares[j] += g * g;
    w[j] -= lr * g / (__builtin_sqrtf(squares[j]) + epsilon);
  }
}

void MomentumBf16(float* __restrict w, uint16_t* __restrict v, const float* __restrict g, float momentum, float lr,
                  uint64_t n, uint32_t key, uint64_t index) {
#pragma omp simd
  for (uint64_t j = 0; j < n; ++j) {
    const float next = momentum * WidenBf16(v[j]) + g[j];
    w[j] -= lr * next;
    v[j] = StochasticBf16(next, RoundingNoise(key, index + j));
  }
}

void AdagradBf16(float* __restrict w, uint16_t* __restrict squares, const float* __restrict d, float scale, float lr,
                 float epsilon, uint64_t n, uint32_t key, uint64_t index) {
#pragma omp simd
  for (uint64_t j = 0; j < n; ++j) {
    const float g = scale * d[j];
    const float sum = WidenBf16(squares[j]) + g * g;
    w[j] -= lr * g / (__builtin_sqrtf(sum) + epsilon);
    squares[j] = StochasticBf16(sum, RoundingNoise(key, index + j));
  }
}

void RoundBf16(const float* __restrict v, uint16_t* __restrict out, uint64_t n, uint32_t key, uint64_t index) {
#pragma omp simd
  for (uint64_t j = 0; j < n; ++j) out[j] = StochasticBf16(v[j], RoundingNoise(key, index + j));
}

void NearestBf16s(const float* __restrict v, uint16_t* __restrict out, uint64_t n) {
#pragma omp simd
  for (uint64_t j = 0; j < n; ++j) out[j] = NearestBf16(v[j]);
}

void WidenBf16s(const uint16_t* __restrict in, float* __restrict out, uint64_t n) {
#pragma omp simd
  for (uint64_t j = 0; j < n; ++j) out[j] = WidenBf16(in[j]);
}

void AxpyBf16(float* __restrict y, const uint16_t* __restrict x, float a, uint64_t n) {
#pragma omp simd
  for (uint64_t j = 0; j < n; ++j) y[j] += a * WidenBf16(x[j]);
}

// A chunk of functions at a time, position by position: gathers across functions, and the
// chunk's running maxima and codes in registers over the positions. Selects written with & so
// that no branch depends on the data (an argmax over random values mispredicts often).
void DwtaCodes(const float* v, const uint32_t* coordinate, uint64_t stride, uint64_t functions,
               uint32_t positions, bool query, uint32_t* codes) {
  for (uint64_t f0 = 0; f0 < functions; f0 += kDwtaChunk) {
    float best[kDwtaChunk];
    uint32_t code[kDwtaChunk];
    for (uint64_t j = 0; j < kDwtaChunk; ++j) best[j] = -__builtin_inff(), code[j] = positions;
    for (uint32_t p = 0; p < positions; ++p) {
      const uint32_t* c = coordinate + uint64_t(p) * stride + f0;
#pragma omp simd
      for (uint64_t j = 0; j < kDwtaChunk; ++j) {
        const float x = v[c[j]];
        const bool better = (x > best[j]) & !(query & (x == 0.0f));
        best[j] = better ? x : best[j];
        code[j] = better ? p : code[j];
      }
    }
    const uint64_t width = functions - f0 < kDwtaChunk ? functions - f0 : kDwtaChunk;
    for (uint64_t j = 0; j < width; ++j) codes[f0 + j] = code[j];
  }
}

}  // namespace
}  // namespace XMLT_VECTOR_KERNELS_NS

const VectorKernels XMLT_VECTOR_KERNELS_TABLE = {
    XMLT_VECTOR_KERNELS_NAME,
    XMLT_VECTOR_KERNELS_NS::BiasExpInPlace,
    XMLT_VECTOR_KERNELS_NS::BiasExpStream,
    XMLT_VECTOR_KERNELS_NS::MaxOf,
    XMLT_VECTOR_KERNELS_NS::ExpInPlace,
    XMLT_VECTOR_KERNELS_NS::ExpSum,
    XMLT_VECTOR_KERNELS_NS::ScaledExp,
    XMLT_VECTOR_KERNELS_NS::Scale,
    XMLT_VECTOR_KERNELS_NS::Add,
    XMLT_VECTOR_KERNELS_NS::ScaleAdd,
    XMLT_VECTOR_KERNELS_NS::Sgd,
    XMLT_VECTOR_KERNELS_NS::Momentum,
    XMLT_VECTOR_KERNELS_NS::Axpy,
    XMLT_VECTOR_KERNELS_NS::Adagrad,
    XMLT_VECTOR_KERNELS_NS::MomentumBf16,
    XMLT_VECTOR_KERNELS_NS::AdagradBf16,
    XMLT_VECTOR_KERNELS_NS::RoundBf16,
    XMLT_VECTOR_KERNELS_NS::NearestBf16s,
    XMLT_VECTOR_KERNELS_NS::WidenBf16s,
    XMLT_VECTOR_KERNELS_NS::AxpyBf16,
    XMLT_VECTOR_KERNELS_NS::DwtaCodes,
};

}  // namespace xmlt::kernels::cpu
