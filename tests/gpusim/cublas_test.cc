// cublasGemmEx on the simulated GPUs against a naive loop, for every transpose and compute type
// the backend uses; TF32 really rounds its inputs; operands outside device memory fault.
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "kernels/cuda/device_buffer.h"
#include "tests/gpusim/gpusim_test_support.h"

namespace gpusim::testing {
namespace {

using xmlt::kernels::cuda::CublasHandle;
using xmlt::kernels::cuda::DeviceBuffer;

// Column-major op(A) (m x k) times op(B) (k x n) into C (m x n), in double.
std::vector<double> Naive(bool ta, bool tb, int m, int n, int k, float alpha, const std::vector<float>& a, int lda,
                          const std::vector<float>& b, int ldb, float beta, const std::vector<float>& c, int ldc) {
  std::vector<double> out(c.begin(), c.end());
  for (int j = 0; j < n; ++j)
    for (int i = 0; i < m; ++i) {
      double sum = 0;
      for (int p = 0; p < k; ++p) {
        const double x = ta ? a[size_t(p) + size_t(i) * lda] : a[size_t(i) + size_t(p) * lda];
        const double y = tb ? b[size_t(j) + size_t(p) * ldb] : b[size_t(p) + size_t(j) * ldb];
        sum += x * y;
      }
      out[size_t(i) + size_t(j) * ldc] = alpha * sum + beta * double(c[size_t(i) + size_t(j) * ldc]);
    }
  return out;
}

std::vector<float> Random(size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-1, 1);
  std::vector<float> v(n);
  for (float& x : v) x = dist(rng);
  return v;
}

TEST_F(SimTest, GemmExMatchesANaiveLoopForEveryTranspose) {
  const int m = 7, n = 5, k = 9;
  CublasHandle handle;
  for (bool ta : {false, true})
    for (bool tb : {false, true}) {
      // Leading dimensions larger than the rows, so that a mix-up of the two shows.
      const int lda = (ta ? k : m) + 3, ldb = (tb ? n : k) + 2, ldc = m + 1;
      const std::vector<float> a = Random(size_t(lda) * (ta ? m : k), 1), b = Random(size_t(ldb) * (tb ? k : n), 2),
                               c = Random(size_t(ldc) * n, 3);
      DeviceBuffer<float> da = DeviceBuffer<float>::FromHost(a), db = DeviceBuffer<float>::FromHost(b),
                          dc = DeviceBuffer<float>::FromHost(c);
      const float alpha = 0.75f, beta = -0.5f;
      ASSERT_EQ(cublasGemmEx(handle.get(), ta ? CUBLAS_OP_T : CUBLAS_OP_N, tb ? CUBLAS_OP_T : CUBLAS_OP_N, m, n, k,
                             &alpha, da.data(), CUDA_R_32F, lda, db.data(), CUDA_R_32F, ldb, &beta, dc.data(),
                             CUDA_R_32F, ldc, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
                CUBLAS_STATUS_SUCCESS);
      const std::vector<float> got = dc.ToHost();
      const std::vector<double> want = Naive(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
      for (int j = 0; j < n; ++j)
        for (int i = 0; i < ldc; ++i) {
          const size_t at = size_t(i) + size_t(j) * ldc;
          if (i >= m) {
            ASSERT_EQ(got[at], c[at]) << "padding row written";
          } else {
            ASSERT_NEAR(got[at], want[at], 1e-5) << "ta " << ta << " tb " << tb << " (" << i << "," << j << ")";
          }
        }
    }
}

TEST_F(SimTest, Tf32RoundsTheInputsToTenMantissaBits) {
  CublasHandle handle;
  const float one_plus = 1.0f + std::ldexp(1.0f, -20);  // below TF32's precision
  DeviceBuffer<float> a = DeviceBuffer<float>::FromHost({one_plus}), b = DeviceBuffer<float>::FromHost({1.0f}),
                      c(1);
  const float alpha = 1, beta = 0;
  for (auto [compute, expected] : {std::pair{CUBLAS_COMPUTE_32F, one_plus}, std::pair{CUBLAS_COMPUTE_32F_FAST_TF32, 1.0f}}) {
    ASSERT_EQ(cublasGemmEx(handle.get(), CUBLAS_OP_N, CUBLAS_OP_N, 1, 1, 1, &alpha, a.data(), CUDA_R_32F, 1, b.data(),
                           CUDA_R_32F, 1, &beta, c.data(), CUDA_R_32F, 1, compute, CUBLAS_GEMM_DEFAULT),
              CUBLAS_STATUS_SUCCESS);
    EXPECT_EQ(c.ToHost()[0], expected) << compute;
  }
}

TEST_F(SimTest, GemmExRefusesBadArgumentsAndFaultsOnShortOperands) {
  CublasHandle handle;
  DeviceBuffer<float> a(6), b(6), c(4);
  const float alpha = 1, beta = 0;
  EXPECT_EQ(cublasGemmEx(handle.get(), CUBLAS_OP_N, CUBLAS_OP_N, 2, 2, 3, &alpha, a.data(), CUDA_R_32F, 1, b.data(),
                         CUDA_R_32F, 3, &beta, c.data(), CUDA_R_32F, 2, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
            CUBLAS_STATUS_INVALID_VALUE)
      << "lda below m";
  EXPECT_EQ(cublasGemmEx(handle.get(), CUBLAS_OP_N, CUBLAS_OP_N, 2, 2, 3, &alpha, a.data(), CUDA_R_16F, 2, b.data(),
                         CUDA_R_32F, 3, &beta, c.data(), CUDA_R_32F, 2, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
            CUBLAS_STATUS_NOT_SUPPORTED);
  // B needs 3 x 3 floats: its 6 end inside the product's reach.
  EXPECT_EQ(cublasGemmEx(handle.get(), CUBLAS_OP_N, CUBLAS_OP_N, 2, 3, 3, &alpha, a.data(), CUDA_R_32F, 2, b.data(),
                         CUDA_R_32F, 3, &beta, c.data(), CUDA_R_32F, 2, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
            CUBLAS_STATUS_SUCCESS);
  EXPECT_EQ(cudaDeviceSynchronize(), cudaErrorIllegalAddress);
}

TEST_F(SimTest, GemmExRunsOnTheHandlesStream) {
  CublasHandle handle;
  xmlt::kernels::cuda::Stream stream;
  ASSERT_EQ(cublasSetStream(handle.get(), stream.get()), CUBLAS_STATUS_SUCCESS);
  DeviceBuffer<float> a = DeviceBuffer<float>::FromHost({2}), b = DeviceBuffer<float>::FromHost({3}), c(1);
  xmlt::kernels::cuda::PinnedBuffer<float> out(1);
  out.data()[0] = 0;
  const float alpha = 1, beta = 0;
  ASSERT_EQ(cublasGemmEx(handle.get(), CUBLAS_OP_N, CUBLAS_OP_N, 1, 1, 1, &alpha, a.data(), CUDA_R_32F, 1, b.data(),
                         CUDA_R_32F, 1, &beta, c.data(), CUDA_R_32F, 1, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
            CUBLAS_STATUS_SUCCESS);
  ASSERT_EQ(cudaMemcpyAsync(out.data(), c.data(), 4, cudaMemcpyDeviceToHost, stream.get()), cudaSuccess);
  EXPECT_EQ(out.data()[0], 0.0f);
  stream.Synchronize();
  EXPECT_EQ(out.data()[0], 6.0f);
}

}  // namespace
}  // namespace gpusim::testing
