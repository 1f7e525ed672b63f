// The tiled parallel GEMM against a naive triple loop, for every transpose combination and for
// sizes below, at and above the tiling threshold, odd ones included.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <stdexcept>
#include <tuple>
#include <vector>

#include "kernels/cpu/gemm.h"

namespace xmlt::kernels::cpu {
namespace {

double At(const std::vector<double>& m, int64_t ld, Op op, int64_t i, int64_t j) {
  return op == Op::kNone ? m[i * ld + j] : m[j * ld + i];
}

TEST(Gemm, MatchesNaiveProduct) {
  std::mt19937_64 rng(31);
  std::uniform_real_distribution<double> uniform(-1, 1);
  for (auto [m, n, k] : {std::tuple<int64_t, int64_t, int64_t>{1, 1, 1}, {3, 5, 7}, {65, 129, 33},
                         {200, 1000, 64}, {130, 67, 300}}) {
    for (Op op_a : {Op::kNone, Op::kTranspose}) {
      for (Op op_b : {Op::kNone, Op::kTranspose}) {
        const int64_t lda = op_a == Op::kNone ? k : m, ldb = op_b == Op::kNone ? n : k;
        std::vector<double> a(m * k), b(k * n), c(m * n);
        for (double& v : a) v = uniform(rng);
        for (double& v : b) v = uniform(rng);
        for (double& v : c) v = uniform(rng);
        std::vector<double> expected = c;
        const double alpha = 0.7, beta = -1.3;
        for (int64_t i = 0; i < m; ++i)
          for (int64_t j = 0; j < n; ++j) {
            double sum = 0;
            for (int64_t p = 0; p < k; ++p) sum += At(a, lda, op_a, i, p) * At(b, ldb, op_b, p, j);
            expected[i * n + j] = beta * expected[i * n + j] + alpha * sum;
          }
        Gemm<double>(op_a, op_b, m, n, k, alpha, a.data(), lda, b.data(), ldb, beta, c.data(), n);
        for (int64_t i = 0; i < m * n; ++i)
          ASSERT_NEAR(c[i], expected[i], 1e-10) << m << "x" << n << "x" << k << " element " << i;
      }
    }
  }
}

// The float products (the training step's), on the libraries XMLT_SGEMM picks (by default oneDNN's
// sgemm for the untransposed product where it is built in and the BLAS for the others; one of them
// for all in the ctest entries *.on_onednn_sgemm and *.on_blas_sgemm), one-threaded and tiled,
// against a double loop;
// k = 0 scales C by beta.
TEST(Gemm, FloatMatchesNaiveProductOnEitherLibrary) {
  std::mt19937_64 rng(37);
  std::uniform_real_distribution<float> uniform(-1, 1);
  for (auto [m, n, k] : {std::tuple<int64_t, int64_t, int64_t>{1, 1, 1}, {3, 5, 0}, {65, 129, 33}, {256, 515, 128}}) {
    for (Op op_a : {Op::kNone, Op::kTranspose}) {
      for (Op op_b : {Op::kNone, Op::kTranspose}) {
        for (bool tiled : {false, true}) {
          const int64_t lda = op_a == Op::kNone ? std::max<int64_t>(k, 1) : m;
          const int64_t ldb = op_b == Op::kNone ? n : std::max<int64_t>(k, 1);
          std::vector<float> a(m * std::max<int64_t>(k, 1)), b(std::max<int64_t>(k, 1) * n), c(m * n);
          for (float& v : a) v = uniform(rng);
          for (float& v : b) v = uniform(rng);
          for (float& v : c) v = uniform(rng);
          std::vector<double> expected(c.begin(), c.end());
          const float alpha = 0.7f, beta = -1.3f;
          for (int64_t i = 0; i < m; ++i)
            for (int64_t j = 0; j < n; ++j) {
              double sum = 0;
              for (int64_t p = 0; p < k; ++p) {
                const double x = op_a == Op::kNone ? a[i * lda + p] : a[p * lda + i];
                const double y = op_b == Op::kNone ? b[p * ldb + j] : b[j * ldb + p];
                sum += x * y;
              }
              expected[i * n + j] = double(beta) * expected[i * n + j] + double(alpha) * sum;
            }
          if (tiled) {
            Gemm<float>(op_a, op_b, m, n, k, alpha, a.data(), lda, b.data(), ldb, beta, c.data(), n);
          } else {
            GemmOneThread<float>(op_a, op_b, m, n, k, alpha, a.data(), lda, b.data(), ldb, beta, c.data(), n);
          }
          for (int64_t i = 0; i < m * n; ++i)
            ASSERT_NEAR(c[i], expected[i], 1e-5 * (1 + double(k))) << m << "x" << n << "x" << k << " element " << i;
        }
      }
    }
  }
}

// cblas takes int sizes: a stride past INT_MAX is refused before BLAS sees it (no memory is
// touched, so the small buffers stand in for huge matrices), on the serial and the tiled path.
TEST(Gemm, RefusesStridesPastBlasInt) {
  const int64_t huge = int64_t{1} << 31;
  std::vector<float> a(4), b(4), c(4);
  EXPECT_THROW(Gemm<float>(Op::kNone, Op::kNone, 2, 2, 2, 1.0f, a.data(), huge, b.data(), 2, 0.0f,
                           c.data(), 2),
               std::invalid_argument);
  EXPECT_THROW(Gemm<float>(Op::kNone, Op::kNone, 1024, 1024, 1024, 1.0f, a.data(), 1024, b.data(),
                           1024, 0.0f, c.data(), huge),
               std::invalid_argument);
}

}  // namespace
}  // namespace xmlt::kernels::cpu
