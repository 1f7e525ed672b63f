// Row-major GEMM over column-major cuBLAS; see gemm.h.
#include "kernels/cuda/gemm.h"

#include <climits>
#include <stdexcept>

#include "kernels/cuda/cuda_check.h"

namespace xmlt::kernels::cuda {
namespace {

cublasOperation_t ToCublas(Op op) { return op == Op::kNone ? CUBLAS_OP_N : CUBLAS_OP_T; }

int ToInt(int64_t value, const char* what) {
  if (value < 0 || value > INT_MAX)
    throw std::invalid_argument(std::string("Gemm: ") + what + " out of cuBLAS's int range");
  return int(value);
}

}  // namespace

void Gemm(cublasHandle_t handle, Math math, Op op_a, Op op_b, int64_t m, int64_t n, int64_t k,
          float alpha, const float* a, int64_t lda, const float* b, int64_t ldb, float beta,
          float* c, int64_t ldc) {
  if (m <= 0 || n <= 0) return;
  // A row-major matrix read as column-major is its transpose, so the row-major C = op(A) op(B) is
  // the column-major C^T = op(B)^T op(A)^T: swap the operands (and m with n), keep each op, keep
  // every leading dimension. With k == 0 cuBLAS scales C by beta, as the CPU BLAS does.
  const cublasComputeType_t compute = math == Math::kTf32   ? CUBLAS_COMPUTE_32F_FAST_TF32
                                      : math == Math::kBf16 ? CUBLAS_COMPUTE_32F_FAST_16BF
                                                            : CUBLAS_COMPUTE_32F;
  XMLT_CUBLAS_CHECK(cublasGemmEx(handle, ToCublas(op_b), ToCublas(op_a), ToInt(n, "n"),
                                 ToInt(m, "m"), ToInt(k, "k"), &alpha, b, CUDA_R_32F,
                                 ToInt(ldb, "ldb"), a, CUDA_R_32F, ToInt(lda, "lda"), &beta, c,
                                 CUDA_R_32F, ToInt(ldc, "ldc"), compute, CUBLAS_GEMM_DEFAULT));
}

}  // namespace xmlt::kernels::cuda
