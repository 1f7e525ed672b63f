// Tiled parallel GEMM over a serial BLAS; see gemm.h.
#include "kernels/cpu/gemm.h"

#include <cblas.h>
#include <tbb/blocked_range2d.h>
#include <tbb/parallel_for.h>

#include <mutex>

// OpenBLAS may be built with its own thread pool; it would fight TBB's, so it is switched off.
extern "C" void openblas_set_num_threads(int) __attribute__((weak));

namespace xmlt::kernels::cpu {
namespace {

void UseSerialBlas() {
  static std::once_flag once;
  std::call_once(once, [] {
    if (openblas_set_num_threads != nullptr) openblas_set_num_threads(1);
  });
}

CBLAS_TRANSPOSE ToCblas(Op op) { return op == Op::kNone ? CblasNoTrans : CblasTrans; }

void SerialGemm(Op op_a, Op op_b, int64_t m, int64_t n, int64_t k, float alpha, const float* a,
                int64_t lda, const float* b, int64_t ldb, float beta, float* c, int64_t ldc) {
  cblas_sgemm(CblasRowMajor, ToCblas(op_a), ToCblas(op_b), m, n, k, alpha, a, lda, b, ldb, beta, c,
              ldc);
}
void SerialGemm(Op op_a, Op op_b, int64_t m, int64_t n, int64_t k, double alpha, const double* a,
                int64_t lda, const double* b, int64_t ldb, double beta, double* c, int64_t ldc) {
  cblas_dgemm(CblasRowMajor, ToCblas(op_a), ToCblas(op_b), m, n, k, alpha, a, lda, b, ldb, beta, c,
              ldc);
}

// Tiles of about this many multiply-adds amortize a BLAS call; smaller products stay on one thread.
constexpr int64_t kMinTileWork = 1 << 18;

}  // namespace

template <class T>
void Gemm(Op op_a, Op op_b, int64_t m, int64_t n, int64_t k, T alpha, const T* a, int64_t lda,
          const T* b, int64_t ldb, T beta, T* c, int64_t ldc) {
  if (m <= 0 || n <= 0) return;
  UseSerialBlas();
  if (m * n * k <= kMinTileWork) {
    SerialGemm(op_a, op_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
    return;
  }
  // Element (i, p) of op(A) is a[i*lda + p] untransposed, a[p*lda + i] transposed; a tile of rows
  // [i0, i1) of op(A) therefore starts at a + i0*lda or a + i0. Same for the columns of op(B).
  const int64_t grain_m = 64;
  const int64_t grain_n = std::max<int64_t>(64, kMinTileWork / (grain_m * std::max<int64_t>(k, 1)));
  tbb::parallel_for(
      tbb::blocked_range2d<int64_t>(0, m, grain_m, 0, n, grain_n),
      [&](const tbb::blocked_range2d<int64_t>& tile) {
        const int64_t i0 = tile.rows().begin(), j0 = tile.cols().begin();
        const T* a_tile = op_a == Op::kNone ? a + i0 * lda : a + i0;
        const T* b_tile = op_b == Op::kNone ? b + j0 : b + j0 * ldb;
        SerialGemm(op_a, op_b, tile.rows().size(), tile.cols().size(), k, alpha, a_tile, lda,
                   b_tile, ldb, beta, c + i0 * ldc + j0, ldc);
      });
}

template void Gemm<float>(Op, Op, int64_t, int64_t, int64_t, float, const float*, int64_t,
                          const float*, int64_t, float, float*, int64_t);
template void Gemm<double>(Op, Op, int64_t, int64_t, int64_t, double, const double*, int64_t,
                           const double*, int64_t, double, double*, int64_t);

}  // namespace xmlt::kernels::cpu
