// cuda::Gemm against the CPU reference (cpu::Gemm in double) for every op pair, odd shapes and
// padded strides, in fp32 and TF32.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <utility>
#include <vector>

#include "kernels/cpu/gemm.h"
#include "kernels/cuda/device_buffer.h"
#include "kernels/cuda/gemm.h"
#include "tests/kernels/cuda_test_gate.h"

namespace xmlt::kernels::cuda {
namespace {

std::vector<float> RandomValues(size_t count, std::mt19937_64& rng) {
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> values(count);
  for (float& v : values) v = normal(rng);
  return values;
}

// Checks |gpu - exact| <= tolerance * (|alpha| (|op(A)| |op(B)|)_ij + |beta| |c_ij|): the scale
// of the rounding error of a dot product, meaningful even where C cancels to near zero.
void CheckGemm(Math math, double tolerance) {
  CublasHandle handle;
  std::mt19937_64 rng(7);
  const int64_t shapes[][3] = {{1, 1, 1}, {7, 13, 5}, {33, 17, 65}, {129, 31, 257}, {3, 300, 2}};
  for (const auto& shape : shapes) {
    const int64_t m = shape[0], n = shape[1], k = shape[2];
    for (Op op_a : {Op::kNone, Op::kTranspose}) {
      for (Op op_b : {Op::kNone, Op::kTranspose}) {
        // Stored shapes and padded row strides.
        const int64_t a_rows = op_a == Op::kNone ? m : k, a_cols = op_a == Op::kNone ? k : m;
        const int64_t b_rows = op_b == Op::kNone ? k : n, b_cols = op_b == Op::kNone ? n : k;
        const int64_t lda = a_cols + 3, ldb = b_cols + 1, ldc = n + 2;
        const std::vector<float> a = RandomValues(a_rows * lda, rng), b = RandomValues(b_rows * ldb, rng);
        const std::vector<float> c = RandomValues(m * ldc, rng);
        const float alpha = 0.7f, beta = -0.3f;

        std::vector<double> a64(a.begin(), a.end()), b64(b.begin(), b.end()), c64(c.begin(), c.end());
        cpu::Gemm<double>(op_a, op_b, m, n, k, alpha, a64.data(), lda, b64.data(), ldb, beta,
                          c64.data(), ldc);
        std::vector<double> abs_a(a64.size()), abs_b(b64.size()), scale(m * ldc, 0.0);
        for (size_t i = 0; i < a64.size(); ++i) abs_a[i] = std::abs(a64[i]);
        for (size_t i = 0; i < b64.size(); ++i) abs_b[i] = std::abs(b64[i]);
        cpu::Gemm<double>(op_a, op_b, m, n, k, std::abs(alpha), abs_a.data(), lda, abs_b.data(),
                          ldb, 0.0, scale.data(), ldc);

        DeviceBuffer<float> da = DeviceBuffer<float>::FromHost(a), db = DeviceBuffer<float>::FromHost(b);
        DeviceBuffer<float> dc = DeviceBuffer<float>::FromHost(c);
        Gemm(handle.get(), math, op_a, op_b, m, n, k, alpha, da.data(), lda, db.data(), ldb, beta,
             dc.data(), ldc);
        const std::vector<float> result = dc.ToHost();
        for (int64_t i = 0; i < m; ++i) {
          for (int64_t j = 0; j < ldc; ++j) {
            const size_t at = i * ldc + j;
            if (j >= n) {  // padding is never written
              ASSERT_EQ(result[at], c[at]);
              continue;
            }
            const double bound = tolerance * (scale[at] + std::abs(beta * c[at])) + 1e-30;
            ASSERT_NEAR(result[at], c64[at], bound)
                << "m " << m << " n " << n << " k " << k << " op_a " << int(op_a) << " op_b "
                << int(op_b) << " at (" << i << ", " << j << ")";
          }
        }
      }
    }
  }
}

TEST(CudaGemm, MatchesCpuReferenceInFp32) {
  XMLT_SKIP_WITHOUT_GPU();
  CheckGemm(Math::kFp32, 1e-5);
}

// TF32 keeps 10 mantissa bits of each input (relative rounding up to 2^-10 if truncated), so a
// product may be off by ~2e-3 of its magnitude; 5e-3 leaves room for the float accumulation.
TEST(CudaGemm, MatchesCpuReferenceInTf32WithinLooserBound) {
  XMLT_SKIP_WITHOUT_GPU();
  CheckGemm(Math::kTf32, 5e-3);
}

// bf16 keeps 7 mantissa bits (relative rounding up to 2^-7 if truncated): a product may be off by
// ~1.6e-2 of its magnitude; 4e-2 leaves room for the float accumulation.
TEST(CudaGemm, MatchesCpuReferenceInBf16WithinLooserBound) {
  XMLT_SKIP_WITHOUT_GPU();
  CheckGemm(Math::kBf16, 4e-2);
}

// Each compute type reaches cuBLAS: 1 + 2^-10 times 1 is exact in fp32 and in TF32 (10 mantissa
// bits) and rounds to 1 in bf16 (7 bits).
TEST(CudaGemm, EachMathRoundsItsInputsToItsOwnWidth) {
  XMLT_SKIP_WITHOUT_GPU();
  CublasHandle handle;
  const float a = 1.0f + 1.0f / 1024.0f, b = 1.0f;
  for (const auto& [math, expected] : {std::pair{Math::kFp32, a}, std::pair{Math::kTf32, a}, std::pair{Math::kBf16, 1.0f}}) {
    DeviceBuffer<float> da = DeviceBuffer<float>::FromHost({a}), db = DeviceBuffer<float>::FromHost({b});
    DeviceBuffer<float> dc = DeviceBuffer<float>::FromHost({0.0f});
    Gemm(handle.get(), math, Op::kNone, Op::kNone, 1, 1, 1, 1.0f, da.data(), 1, db.data(), 1, 0.0f, dc.data(), 1);
    EXPECT_EQ(dc.ToHost()[0], expected) << "math " << int(math);
  }
}

}  // namespace
}  // namespace xmlt::kernels::cuda
