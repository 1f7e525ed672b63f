// The direct products (kernels/cpu/direct_gemm.h) on every vector ISA this CPU runs, against a
// double reference: every register tile the edges of C need (rows and columns not multiples of
// the tile or the vector), both forms of A, strides wider than the matrices (whose padding must
// stay untouched), and the BLAS's rules for beta 0 and alpha 0. The transposition exactly.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "kernels/cpu/cpu_isa.h"
#include "kernels/cpu/direct_gemm.h"

namespace xmlt::kernels::cpu {
namespace {

class DirectGemmOnIsa : public ::testing::TestWithParam<CpuIsa> {
 protected:
  void SetUp() override {
    if (!CpuSupports(GetParam())) GTEST_SKIP() << "this CPU has no " << CpuIsaName(GetParam());
    kernels_ = DirectGemmKernelsFor(GetParam());
  }
  const DirectGemmKernels* kernels_ = nullptr;
};

std::vector<float> Uniform(size_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> uniform(-1, 1);
  std::vector<float> v(n);
  for (float& x : v) x = uniform(rng);
  return v;
}

constexpr float kPadding = 12345.0f;

TEST_P(DirectGemmOnIsa, NamesItsIsa) { EXPECT_STREQ(kernels_->isa, CpuIsaName(GetParam())); }

// m up to 9 covers every row count of a tile (8 on AVX-512, 6 on AVX2) and one past it; n covers
// 1 to 3 vectors with and without a partial last one, and more than one panel.
TEST_P(DirectGemmOnIsa, MatchesTheDoubleReferenceOnEveryTileShape) {
  uint64_t seed = 1;
  for (const int64_t m : {1, 2, 5, 6, 7, 8, 9, 17}) {
    for (const int64_t n : {1, 7, 8, 9, 16, 17, 31, 33, 48, 49, 100, 128}) {
      for (const int64_t k : {1, 3, 64}) {
        for (const Op op_a : {Op::kNone, Op::kTranspose}) {
          for (const auto& [alpha, beta] : {std::pair{1.0f, 0.0f}, {0.7f, -1.3f}, {-0.01f, 1.0f}}) {
            // Strides a little wider than the matrices: their padding must survive.
            const int64_t lda = (op_a == Op::kNone ? k : m) + 3, ldb = n + 5, ldc = n + 7;
            const int64_t a_rows = op_a == Op::kNone ? m : k;
            std::vector<float> a = Uniform(size_t(a_rows * lda), seed++);
            std::vector<float> b = Uniform(size_t(k * ldb), seed++);
            std::vector<float> c(size_t(m * ldc), kPadding);
            const std::vector<float> c_in = Uniform(size_t(m * ldc), seed++);
            for (int64_t i = 0; i < m; ++i)
              for (int64_t j = 0; j < n; ++j)
                // beta 0 must not read C: NaN there must not reach the result.
                c[i * ldc + j] = beta == 0.0f ? std::numeric_limits<float>::quiet_NaN() : c_in[i * ldc + j];
            kernels_->gemm(op_a, m, n, k, alpha, a.data(), lda, b.data(), ldb, beta, c.data(), ldc);
            for (int64_t i = 0; i < m; ++i) {
              for (int64_t j = 0; j < ldc; ++j) {
                const float got = c[i * ldc + j];
                if (j >= n) {
                  ASSERT_EQ(got, kPadding) << "padding of C written at " << i << "," << j;
                  continue;
                }
                double sum = 0;
                for (int64_t p = 0; p < k; ++p)
                  sum += double(op_a == Op::kNone ? a[i * lda + p] : a[p * lda + i]) * double(b[p * ldb + j]);
                const double want = double(alpha) * sum + (beta == 0.0f ? 0.0 : double(beta) * c_in[i * ldc + j]);
                ASSERT_NEAR(got, want, 1e-5 * (1.0 + double(k)))
                    << m << "x" << n << "x" << k << (op_a == Op::kNone ? " A" : " A^T") << " alpha " << alpha
                    << " beta " << beta << " at " << i << "," << j;
              }
            }
          }
        }
      }
    }
  }
}

// As the BLAS: k = 0 or alpha = 0 leaves C = beta C and reads neither A nor B (NaN there).
TEST_P(DirectGemmOnIsa, EmptyProductOrZeroAlphaScalesC) {
  const int64_t m = 9, n = 33, k = 5;
  const std::vector<float> nan(size_t(m * k + k * n), std::numeric_limits<float>::quiet_NaN());
  for (const auto& [kk, alpha] : {std::pair<int64_t, float>{0, 1.0f}, {k, 0.0f}}) {
    std::vector<float> c = Uniform(size_t(m * n), 9);
    const std::vector<float> c_in = c;
    kernels_->gemm(Op::kNone, m, n, kk, alpha, nan.data(), k, nan.data() + m * k, n, -2.0f, c.data(), n);
    for (size_t i = 0; i < c.size(); ++i) ASSERT_FLOAT_EQ(c[i], -2.0f * c_in[i]) << "k " << kk << " at " << i;
  }
}

// The logits' layout: the block's weights (width x inputs) transposed to inputs x width, every
// value exactly where it belongs, for sizes on and off the 8 x 8 and 16-column pieces.
TEST_P(DirectGemmOnIsa, TransposeMovesEveryValueAndNothingElse) {
  for (const auto& [rows, cols] : {std::pair<int64_t, int64_t>{1, 1}, {7, 9}, {8, 16}, {17, 33}, {395, 128}, {512, 100}}) {
    const int64_t ld_src = cols + 2, ld_dst = rows + 16;
    const std::vector<float> src = Uniform(size_t(rows * ld_src), uint64_t(rows * 1000 + cols));
    std::vector<float> dst(size_t(cols * ld_dst), kPadding);
    kernels_->transpose(src.data(), rows, cols, ld_src, dst.data(), ld_dst);
    for (int64_t p = 0; p < cols; ++p)
      for (int64_t i = 0; i < ld_dst; ++i)
        ASSERT_EQ(dst[p * ld_dst + i], i < rows ? src[i * ld_src + p] : kPadding)
            << rows << "x" << cols << " at " << p << "," << i;
  }
}

INSTANTIATE_TEST_SUITE_P(, DirectGemmOnIsa, ::testing::Values(CpuIsa::kAvx2, CpuIsa::kAvx512),
                         [](const ::testing::TestParamInfo<CpuIsa>& info) { return std::string(CpuIsaName(info.param)); });

}  // namespace
}  // namespace xmlt::kernels::cpu
