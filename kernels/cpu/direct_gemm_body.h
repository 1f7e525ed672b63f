// The bodies of direct_gemm.h, included once by each direct_gemm_<isa>.cc, which is compiled for
// its ISA and defines XMLT_DIRECT_GEMM_NS, XMLT_DIRECT_GEMM_TABLE and XMLT_DIRECT_GEMM_NAME first.
// Everything here has internal linkage in that TU's own namespace (see vector_kernels_body.h for
// why no shared inline function may be compiled here).
#include <immintrin.h>

#include <cstdint>

#include "kernels/cpu/direct_gemm.h"

namespace xmlt::kernels::cpu {
namespace XMLT_DIRECT_GEMM_NS {
namespace {

#if defined(__AVX512F__)
using Vec = __m512;
using Mask = __mmask16;
constexpr int kLanes = 16;
// The register tile: 8 rows of A broadcast against 3 vectors of B, 24 of the 32 registers
// accumulating. Per step of k: 3 vector loads and 8 broadcasts feed 24 FMAs (12 cycles on two FMA
// pipes), and 24 independent chains hide the FMA latency.
constexpr int kTileRows = 8, kTileVecs = 3;
[[gnu::always_inline]] inline Vec Zero() { return _mm512_setzero_ps(); }
[[gnu::always_inline]] inline Vec Load(const float* p) { return _mm512_loadu_ps(p); }
[[gnu::always_inline]] inline Vec LoadPart(const float* p, Mask m) { return _mm512_maskz_loadu_ps(m, p); }
[[gnu::always_inline]] inline void Store(float* p, Vec v) { _mm512_storeu_ps(p, v); }
[[gnu::always_inline]] inline void StorePart(float* p, Vec v, Mask m) { _mm512_mask_storeu_ps(p, m, v); }
[[gnu::always_inline]] inline Vec Broadcast(const float* p) { return _mm512_set1_ps(*p); }
[[gnu::always_inline]] inline Vec Splat(float x) { return _mm512_set1_ps(x); }
[[gnu::always_inline]] inline Vec Fma(Vec a, Vec b, Vec c) { return _mm512_fmadd_ps(a, b, c); }
[[gnu::always_inline]] inline Vec Mul(Vec a, Vec b) { return _mm512_mul_ps(a, b); }
[[gnu::always_inline]] inline Mask FirstLanes(int n) { return Mask((1u << n) - 1); }
#elif defined(__AVX2__) && defined(__FMA__)
using Vec = __m256;
using Mask = __m256i;
constexpr int kLanes = 8;
// 6 rows x 2 vectors: 12 accumulators, 2 loads of B and a broadcast in the 16 registers.
constexpr int kTileRows = 6, kTileVecs = 2;
[[gnu::always_inline]] inline Vec Zero() { return _mm256_setzero_ps(); }
[[gnu::always_inline]] inline Vec Load(const float* p) { return _mm256_loadu_ps(p); }
[[gnu::always_inline]] inline Vec LoadPart(const float* p, Mask m) { return _mm256_maskload_ps(p, m); }
[[gnu::always_inline]] inline void Store(float* p, Vec v) { _mm256_storeu_ps(p, v); }
[[gnu::always_inline]] inline void StorePart(float* p, Vec v, Mask m) { _mm256_maskstore_ps(p, m, v); }
[[gnu::always_inline]] inline Vec Broadcast(const float* p) { return _mm256_broadcast_ss(p); }
[[gnu::always_inline]] inline Vec Splat(float x) { return _mm256_set1_ps(x); }
[[gnu::always_inline]] inline Vec Fma(Vec a, Vec b, Vec c) { return _mm256_fmadd_ps(a, b, c); }
[[gnu::always_inline]] inline Vec Mul(Vec a, Vec b) { return _mm256_mul_ps(a, b); }
[[gnu::always_inline]] inline Mask FirstLanes(int n) {
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(n), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}
#else
#error "direct_gemm_body.h needs AVX2 and FMA or AVX-512"
#endif

// One register tile: rows x (vecs vectors) of C over all of k. The last vector covers `mask`'s
// lanes only when kPart. kTransA reads A[p * lda + i], else A[i * lda + p].
template <int kRows, int kVecs, bool kTransA, bool kPart>
void Tile(int64_t k, float alpha, const float* a, int64_t lda, const float* b, int64_t ldb, float beta,
          float* c, int64_t ldc, Mask mask) {
  Vec acc[kRows][kVecs];
#pragma GCC unroll 8
  for (int i = 0; i < kRows; ++i)
#pragma GCC unroll 4
    for (int v = 0; v < kVecs; ++v) acc[i][v] = Zero();
  for (int64_t p = 0; p < k; ++p) {
    const float* b_row = b + p * ldb;
    Vec bv[kVecs];
#pragma GCC unroll 4
    for (int v = 0; v < kVecs; ++v)
      bv[v] = kPart && v == kVecs - 1 ? LoadPart(b_row + v * kLanes, mask) : Load(b_row + v * kLanes);
    const float* a_step = kTransA ? a + p * lda : a + p;
#pragma GCC unroll 8
    for (int i = 0; i < kRows; ++i) {
      const Vec x = Broadcast(kTransA ? a_step + i : a_step + i * lda);
#pragma GCC unroll 4
      for (int v = 0; v < kVecs; ++v) acc[i][v] = Fma(x, bv[v], acc[i][v]);
    }
  }
  const Vec alphas = Splat(alpha), betas = Splat(beta);
#pragma GCC unroll 8
  for (int i = 0; i < kRows; ++i) {
    float* c_row = c + i * ldc;
#pragma GCC unroll 4
    for (int v = 0; v < kVecs; ++v) {
      const bool part = kPart && v == kVecs - 1;
      Vec out = Mul(alphas, acc[i][v]);
      // beta 0 never reads C: it may hold anything, NaN included.
      if (beta != 0.0f) out = Fma(betas, part ? LoadPart(c_row + v * kLanes, mask) : Load(c_row + v * kLanes), out);
      if (part) {
        StorePart(c_row + v * kLanes, out, mask);
      } else {
        Store(c_row + v * kLanes, out);
      }
    }
  }
}

using TileFn = void (*)(int64_t, float, const float*, int64_t, const float*, int64_t, float, float*, int64_t, Mask);

// Every tile shape the edges of C need: [rows - 1][vecs - 1][part].
template <bool kTransA>
struct TileTable {
  TileFn fn[kTileRows][kTileVecs][2];
  constexpr TileTable() : fn() { Fill<1>(); }
  template <int kRows>
  constexpr void Fill() {
    FillVecs<kRows, 1>();
    if constexpr (kRows < kTileRows) Fill<kRows + 1>();
  }
  template <int kRows, int kVecs>
  constexpr void FillVecs() {
    fn[kRows - 1][kVecs - 1][0] = &Tile<kRows, kVecs, kTransA, false>;
    fn[kRows - 1][kVecs - 1][1] = &Tile<kRows, kVecs, kTransA, true>;
    if constexpr (kVecs < kTileVecs) FillVecs<kRows, kVecs + 1>();
  }
};

template <bool kTransA>
void GemmOf(int64_t m, int64_t n, int64_t k, float alpha, const float* a, int64_t lda, const float* b,
            int64_t ldb, float beta, float* c, int64_t ldc) {
  static constexpr TileTable<kTransA> kTiles;
  constexpr int64_t kPanel = int64_t(kTileVecs) * kLanes;
  // A panel of B's columns (k x 48 floats with AVX-512) stays in cache while every row tile of C
  // runs over it; A's rows stream past it.
  for (int64_t j = 0; j < n; j += kPanel) {
    const int64_t cols = n - j < kPanel ? n - j : kPanel;
    const int vecs = int((cols + kLanes - 1) / kLanes);
    const int last = int(cols - int64_t(vecs - 1) * kLanes);
    const bool part = last != kLanes;
    const Mask mask = FirstLanes(last);
    for (int64_t i = 0; i < m; i += kTileRows) {
      const int rows = int(m - i < kTileRows ? m - i : kTileRows);
      const float* a_tile = kTransA ? a + i : a + i * lda;
      kTiles.fn[rows - 1][vecs - 1][part](k, alpha, a_tile, lda, b + j, ldb, beta, c + i * ldc + j, ldc, mask);
    }
  }
}

void Gemm(Op op_a, int64_t m, int64_t n, int64_t k, float alpha, const float* a, int64_t lda, const float* b,
          int64_t ldb, float beta, float* c, int64_t ldc) {
  if (m <= 0 || n <= 0) return;
  if (alpha == 0.0f) k = 0;  // as the BLAS: C = beta * C, A and B unread
  if (op_a == Op::kTranspose) {
    GemmOf<true>(m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
  } else {
    GemmOf<false>(m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
  }
}

// 8 x 8 floats: dst row p = src column p, by the usual unpack, shuffle and lane swap.
[[gnu::always_inline]] inline void Transpose8x8(const float* src, int64_t ld_src, float* dst, int64_t ld_dst) {
  __m256 r[8], t[8];
#pragma GCC unroll 8
  for (int i = 0; i < 8; ++i) r[i] = _mm256_loadu_ps(src + i * ld_src);
#pragma GCC unroll 4
  for (int i = 0; i < 8; i += 2) {
    t[i] = _mm256_unpacklo_ps(r[i], r[i + 1]);
    t[i + 1] = _mm256_unpackhi_ps(r[i], r[i + 1]);
  }
#pragma GCC unroll 2
  for (int i = 0; i < 8; i += 4) {
    r[i] = _mm256_shuffle_ps(t[i], t[i + 2], _MM_SHUFFLE(1, 0, 1, 0));
    r[i + 1] = _mm256_shuffle_ps(t[i], t[i + 2], _MM_SHUFFLE(3, 2, 3, 2));
    r[i + 2] = _mm256_shuffle_ps(t[i + 1], t[i + 3], _MM_SHUFFLE(1, 0, 1, 0));
    r[i + 3] = _mm256_shuffle_ps(t[i + 1], t[i + 3], _MM_SHUFFLE(3, 2, 3, 2));
  }
#pragma GCC unroll 4
  for (int i = 0; i < 4; ++i) {
    _mm256_storeu_ps(dst + i * ld_dst, _mm256_permute2f128_ps(r[i], r[i + 4], 0x20));
    _mm256_storeu_ps(dst + (i + 4) * ld_dst, _mm256_permute2f128_ps(r[i], r[i + 4], 0x31));
  }
}

// Strips of 16 columns of src (16 rows of dst), 8 rows at a time: each line of src is read once
// and each row of dst is written front to back.
void Transpose(const float* src, int64_t rows, int64_t cols, int64_t ld_src, float* dst, int64_t ld_dst) {
  const int64_t rows8 = rows / 8 * 8, cols16 = cols / 16 * 16;
  for (int64_t p = 0; p < cols16; p += 16) {
    for (int64_t i = 0; i < rows8; i += 8) {
      Transpose8x8(src + i * ld_src + p, ld_src, dst + p * ld_dst + i, ld_dst);
      Transpose8x8(src + i * ld_src + p + 8, ld_src, dst + (p + 8) * ld_dst + i, ld_dst);
    }
  }
  for (int64_t p = cols16; p < cols; ++p)
    for (int64_t i = 0; i < rows8; ++i) dst[p * ld_dst + i] = src[i * ld_src + p];
  for (int64_t i = rows8; i < rows; ++i)
    for (int64_t p = 0; p < cols; ++p) dst[p * ld_dst + i] = src[i * ld_src + p];
}

}  // namespace
}  // namespace XMLT_DIRECT_GEMM_NS

extern const DirectGemmKernels XMLT_DIRECT_GEMM_TABLE = {XMLT_DIRECT_GEMM_NAME, &XMLT_DIRECT_GEMM_NS::Gemm,
                                                         &XMLT_DIRECT_GEMM_NS::Transpose};

}  // namespace xmlt::kernels::cpu
