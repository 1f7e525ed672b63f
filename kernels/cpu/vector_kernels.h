// The CPU step's loops outside its GEMMs, over float arrays, compiled once per instruction set
// (vector_kernels_{baseline,avx2,avx512}.cc from vector_kernels_body.h) and picked at run time
// (cpu_isa.h). The double models of the gradient checks keep the plain loops of their callers.
#pragma once

#include <cstdint>

namespace xmlt::kernels::cpu {

struct VectorKernels {
  const char* isa;
  // z[j] += bias[j]; then z[j] = exp(z[j] - max) with max = max_j z[j]; returns max and the sum.
  void (*bias_exp_in_place)(float* z, const float* bias, uint64_t n, float* max, float* sum);
  // The same for z that stays: max = max_j (z[j] + bias[j]), dst[j] = exp(z[j] + bias[j] - max),
  // and their sum. Where dst is 64-byte aligned it gets non-temporal stores, which the caller
  // fences (_mm_sfence) before another thread reads dst: the fused output layer's logits, not
  // read again until the backward pass.
  void (*bias_exp_stream)(const float* z, const float* bias, uint64_t n, float* dst, float* max, float* sum);
  // max_j z[j] (n >= 1).
  float (*max)(const float* z, uint64_t n);
  // z[j] = exp(z[j] - max); returns the sum of the new z.
  float (*exp_in_place)(float* z, float max, uint64_t n);
  // sum_j exp(z[j] - max).
  float (*exp_sum)(const float* z, float max, uint64_t n);
  // dst[j] = s * exp(z[j] - max).
  void (*scaled_exp)(float* dst, const float* z, float s, float max, uint64_t n);
  // dst[j] = f * src[j] (dst may be src).
  void (*scale)(float* dst, const float* src, float f, uint64_t n);
  // sums[j] += x[j].
  void (*add)(float* sums, const float* x, uint64_t n);
  // dst[j] = f * src[j]; sums[j] += dst[j] (one pass where scale and add would make two).
  void (*scale_add)(float* dst, const float* src, float f, float* sums, uint64_t n);
  // w[j] -= lr * g[j].
  void (*sgd)(float* w, const float* g, float lr, uint64_t n);
  // v[j] = momentum * v[j] + g[j]; w[j] -= lr * v[j].
  void (*momentum)(float* w, float* v, const float* g, float momentum, float lr, uint64_t n);
  // y[j] += a * x[j]: the first layer's rows, summed into a row's units (forward) or a feature's
  // gradient (backward).
  void (*axpy)(float* y, const float* x, float a, uint64_t n);
  // Adagrad on a first-layer row, with g[j] = scale * d[j]: squares[j] += g[j]^2, then
  // w[j] -= lr * g[j] / (sqrt(squares[j]) + epsilon).
  void (*adagrad)(float* w, float* squares, const float* d, float scale, float lr, float epsilon, uint64_t n);
  // The same two with the state in bfloat16 (stochastic_rounding.h): each value is widened, steps
  // in fp32 as above (w takes the fp32 result), and is stored rounded with the noise of
  // (key, index + j), index being the offset of v[0] or squares[0] in the whole state.
  void (*momentum_bf16)(float* w, uint16_t* v, const float* g, float momentum, float lr, uint64_t n, uint32_t key,
                        uint64_t index);
  void (*adagrad_bf16)(float* w, uint16_t* squares, const float* d, float scale, float lr, float epsilon, uint64_t n,
                       uint32_t key, uint64_t index);
  // out[j] = v[j] rounded to bf16 with the noise of (key, index + j).
  void (*round_bf16)(const float* v, uint16_t* out, uint64_t n, uint32_t key, uint64_t index);
  // out[j] = v[j] rounded to its nearest bf16, ties to even, a NaN kept a NaN: the common start a
  // merge gives replicas kept in bf16 (merge/replica_blocks.h).
  void (*nearest_bf16)(const float* v, uint16_t* out, uint64_t n);
  // out[j] = in[j] widened from bf16 (exact): weights kept in bf16, for a step that writes them.
  void (*widen_bf16)(const uint16_t* in, float* out, uint64_t n);
  // y[j] += a * x[j] with x in bf16: the first layer's rows of weights kept in bf16 (forward).
  void (*axpy_bf16)(float* y, const uint16_t* x, float a, uint64_t n);
  // DWTA's codes (SLIDE's hash, kernels/lsh): for each function f < functions, the position p <
  // positions of the largest v[coordinate[p * stride + f]], the first of equals, or `positions`
  // when every one is absent (a query's zeros, when query). stride is a multiple of
  // kDwtaChunk >= functions, and coordinate holds valid indices of v up to stride in every row.
  void (*dwta_codes)(const float* v, const uint32_t* coordinate, uint64_t stride, uint64_t functions,
                     uint32_t positions, bool query, uint32_t* codes);
};

// The functions dwta_codes hashes together, one AVX-512 vector: its stride is a multiple of it.
constexpr uint64_t kDwtaChunk = 16;

// One table per ISA; each is defined in its own translation unit compiled for that ISA.
extern const VectorKernels kVectorKernelsBaseline;
extern const VectorKernels kVectorKernelsAvx2;
extern const VectorKernels kVectorKernelsAvx512;

}  // namespace xmlt::kernels::cpu
