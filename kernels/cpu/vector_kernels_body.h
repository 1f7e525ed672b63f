// The bodies of vector_kernels.h, included once by each vector_kernels_<isa>.cc, which is compiled
// for its ISA and defines XMLT_VECTOR_KERNELS_NS and XMLT_VECTOR_KERNELS_TABLE first.
// Everything here is in that TU's own namespace and calls only always-inline code: an out-of-line
// copy of a shared inline function, compiled for AVX-512, could otherwise be the one the linker
// keeps for every caller, and stop the program on a CPU without AVX-512.
#include <cstdint>

#include "kernels/cpu/fast_exp.h"
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
    XMLT_VECTOR_KERNELS_NAME,          XMLT_VECTOR_KERNELS_NS::BiasExpInPlace, XMLT_VECTOR_KERNELS_NS::MaxOf,
    XMLT_VECTOR_KERNELS_NS::ExpInPlace, XMLT_VECTOR_KERNELS_NS::ExpSum,        XMLT_VECTOR_KERNELS_NS::ScaledExp,
    XMLT_VECTOR_KERNELS_NS::Scale,      XMLT_VECTOR_KERNELS_NS::Add,           XMLT_VECTOR_KERNELS_NS::Sgd,
    XMLT_VECTOR_KERNELS_NS::Momentum,  XMLT_VECTOR_KERNELS_NS::DwtaCodes,
};

}  // namespace xmlt::kernels::cpu
