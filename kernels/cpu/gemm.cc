// Tiled parallel GEMM over a serial BLAS; see gemm.h.
#include "kernels/cpu/gemm.h"

#include <cblas.h>
#include <tbb/blocked_range2d.h>
#include <tbb/parallel_for.h>
#include <tbb/partitioner.h>
#include <tbb/task_arena.h>

#include <algorithm>
#include <cstdlib>
#include <limits>
#include <mutex>
#include <stdexcept>
#include <string>

#include "kernels/cpu/cpu_isa.h"
#include "kernels/cpu/direct_gemm.h"

#if XMLT_HAVE_ONEDNN
#include <oneapi/dnnl/dnnl.h>
#endif

// OpenBLAS may be built with its own thread pool; it would fight TBB's, so it is switched off.
extern "C" void openblas_set_num_threads(int) __attribute__((weak));
// oneDNN's sgemm, when chosen, runs on its caller's thread too (its OpenMP threads: one).
extern "C" void omp_set_num_threads(int) __attribute__((weak));

namespace xmlt::kernels::cpu {
namespace {

void UseSerialBlas() {
  static std::once_flag once;
  std::call_once(once, [] {
    if (openblas_set_num_threads != nullptr) openblas_set_num_threads(1);
  });
}

CBLAS_TRANSPOSE ToCblas(Op op) { return op == Op::kNone ? CblasNoTrans : CblasTrans; }

// cblas takes int sizes and strides (blasint is int in Debian's OpenBLAS). Gemm tiles m and n
// below this; k and the strides cannot be tiled, so a value past it is refused, not truncated.
constexpr int64_t kMaxBlasInt = std::numeric_limits<int>::max();

void CheckBlasInts(int64_t m, int64_t n, int64_t k, int64_t lda, int64_t ldb, int64_t ldc) {
  for (const int64_t value : {m, n, k, lda, ldb, ldc})
    if (value > kMaxBlasInt)
      throw std::invalid_argument("gemm: size or stride " + std::to_string(value) +
                                  " exceeds the BLAS's int range");
}

// The float products' library. XMLT_SGEMM=blas, onednn or direct runs every product it can on one
// of them; the default, auto, picks per product by measurement inside the AVX-512 and AVX2 steps
// at the output layer's shapes (docs/BENCHMARKS.md): the direct kernels (direct_gemm.h) for
// C = A B^T (the logits: no packing of the shared input, one transposition of the block's
// weights), oneDNN's sgemm for C = A B (the input gradient) and the BLAS for C = A^T B (the
// weight gradient), where the direct kernels lost to them. The direct kernels need AVX2 (the
// active ISA, cpu_isa.h) and k up to kDirectMaxK; B^T is first transposed into a buffer of the
// calling thread (DirectGemm), up to kDirectMaxTransposed floats. Past those, and without oneDNN in the build,
// the BLAS.
enum class SgemmChoice { kBlas, kOneDnn, kDirect, kAuto };

SgemmChoice SgemmFromEnvironment() {
  static const SgemmChoice choice = [] {
    const char* value = std::getenv("XMLT_SGEMM");
    const std::string name = value == nullptr ? "" : value;
    if (name.empty() || name == "auto") return SgemmChoice::kAuto;
    if (name == "blas") return SgemmChoice::kBlas;
    if (name == "direct") return SgemmChoice::kDirect;
    if (name != "onednn")
      throw std::invalid_argument("XMLT_SGEMM must be auto, blas, onednn or direct, not '" + name + "'");
#if XMLT_HAVE_ONEDNN
    return SgemmChoice::kOneDnn;
#else
    throw std::invalid_argument("XMLT_SGEMM=onednn: this build has no oneDNN (Debian: libdnnl-dev)");
#endif
  }();
  return choice;
}

// Past these the B panel a register tile runs over (k x 48 floats) leaves L2, and the
// transposed copy of B would be a large allocation per thread: the libraries' packing pays there.
constexpr int64_t kDirectMaxK = 1024;
constexpr int64_t kDirectMaxTransposed = int64_t{1} << 20;  // floats, 4 MiB

const DirectGemmKernels* DirectGemmFor(Op op_b, int64_t n, int64_t k) {
  const SgemmChoice choice = SgemmFromEnvironment();
  if (choice != SgemmChoice::kDirect && !(choice == SgemmChoice::kAuto && op_b == Op::kTranspose)) return nullptr;
  if (k > kDirectMaxK || (op_b == Op::kTranspose && n * k > kDirectMaxTransposed)) return nullptr;
  return DirectGemmKernelsFor(ActiveCpuIsa());
}

bool OneDnnSgemmFor(Op op_a, Op op_b) {
  const SgemmChoice choice = SgemmFromEnvironment();  // refuses a bad XMLT_SGEMM in every build
#if XMLT_HAVE_ONEDNN
  return choice == SgemmChoice::kOneDnn ||
         (choice == SgemmChoice::kAuto && op_a == Op::kNone && op_b == Op::kNone);
#else
  (void)choice, (void)op_a, (void)op_b;
  return false;
#endif
}

void SerialGemm(Op op_a, Op op_b, int64_t m, int64_t n, int64_t k, float alpha, const float* a,
                int64_t lda, const float* b, int64_t ldb, float beta, float* c, int64_t ldc) {
  CheckBlasInts(m, n, k, lda, ldb, ldc);
  if (const DirectGemmKernels* direct = DirectGemmFor(op_b, n, k)) {
    DirectGemm(*direct, op_a, op_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
    return;
  }
#if XMLT_HAVE_ONEDNN
  if (OneDnnSgemmFor(op_a, op_b)) {
    thread_local const bool serial = [] {
      if (omp_set_num_threads != nullptr) omp_set_num_threads(1);
      return true;
    }();
    (void)serial;
    // An empty inner dimension: oneDNN leaves C as it is, the BLAS (and this function) scales it.
    if (k == 0) {
      for (int64_t i = 0; i < m; ++i)
        for (int64_t j = 0; j < n; ++j) c[i * ldc + j] = beta == 0.0f ? 0.0f : beta * c[i * ldc + j];
      return;
    }
    const dnnl_status_t status = dnnl_sgemm(op_a == Op::kNone ? 'N' : 'T', op_b == Op::kNone ? 'N' : 'T', m, n, k,
                                            alpha, a, lda, b, ldb, beta, c, ldc);
    if (status != dnnl_success) throw std::runtime_error("oneDNN sgemm failed: status " + std::to_string(int(status)));
    return;
  }
#else
  OneDnnSgemmFor(op_a, op_b);  // refuses XMLT_SGEMM=onednn
#endif
  cblas_sgemm(CblasRowMajor, ToCblas(op_a), ToCblas(op_b), m, n, k, alpha, a, lda, b, ldb, beta, c,
              ldc);
}
void SerialGemm(Op op_a, Op op_b, int64_t m, int64_t n, int64_t k, double alpha, const double* a,
                int64_t lda, const double* b, int64_t ldb, double beta, double* c, int64_t ldc) {
  CheckBlasInts(m, n, k, lda, ldb, ldc);
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
  // In double: m * n * k of an absurd shape must not overflow int64 into a small number.
  if (double(m) * double(n) * double(k) <= double(kMinTileWork)) {
    SerialGemm(op_a, op_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
    return;
  }
  // Tiles as large as possible (each BLAS call packs its operands, so small tiles pay that again
  // and again) but enough of them to keep every thread busy: halve the longer side until there
  // are about four tiles per thread. Never past the BLAS's int: the simple_partitioner below
  // splits every range down to its grain, so a tile is at most tile_m x tile_n.
  const int64_t target_tiles = 4 * int64_t(tbb::this_task_arena::max_concurrency());
  int64_t tile_m = std::min(m, kMaxBlasInt), tile_n = std::min(n, kMaxBlasInt);
  auto tiles = [&] { return ((m + tile_m - 1) / tile_m) * ((n + tile_n - 1) / tile_n); };
  while (tiles() < target_tiles) {
    if (tile_n >= tile_m && tile_n > 32) {
      tile_n = (tile_n + 1) / 2;
    } else if (tile_m > 16) {
      tile_m = (tile_m + 1) / 2;
    } else {
      break;
    }
  }
  // Element (i, p) of op(A) is a[i*lda + p] untransposed, a[p*lda + i] transposed; a tile of rows
  // [i0, i1) of op(A) therefore starts at a + i0*lda or a + i0. Same for the columns of op(B).
  tbb::parallel_for(
      tbb::blocked_range2d<int64_t>(0, m, tile_m, 0, n, tile_n),
      [&](const tbb::blocked_range2d<int64_t>& tile) {
        const int64_t i0 = tile.rows().begin(), j0 = tile.cols().begin();
        const T* a_tile = op_a == Op::kNone ? a + i0 * lda : a + i0;
        const T* b_tile = op_b == Op::kNone ? b + j0 : b + j0 * ldb;
        SerialGemm(op_a, op_b, tile.rows().size(), tile.cols().size(), k, alpha, a_tile, lda,
                   b_tile, ldb, beta, c + i0 * ldc + j0, ldc);
      },
      tbb::simple_partitioner());
}

template <class T>
void GemmOneThread(Op op_a, Op op_b, int64_t m, int64_t n, int64_t k, T alpha, const T* a,
                   int64_t lda, const T* b, int64_t ldb, T beta, T* c, int64_t ldc) {
  if (m <= 0 || n <= 0) return;
  UseSerialBlas();
  SerialGemm(op_a, op_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

template void Gemm<float>(Op, Op, int64_t, int64_t, int64_t, float, const float*, int64_t,
                          const float*, int64_t, float, float*, int64_t);
template void Gemm<double>(Op, Op, int64_t, int64_t, int64_t, double, const double*, int64_t,
                           const double*, int64_t, double, double*, int64_t);
template void GemmOneThread<float>(Op, Op, int64_t, int64_t, int64_t, float, const float*, int64_t,
                                   const float*, int64_t, float, float*, int64_t);
template void GemmOneThread<double>(Op, Op, int64_t, int64_t, int64_t, double, const double*,
                                    int64_t, const double*, int64_t, double, double*, int64_t);

}  // namespace xmlt::kernels::cpu
