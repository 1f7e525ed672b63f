// Dense matrix products on the GPU through cuBLAS, with the row-major signature of
// kernels/cpu/gemm.h: C = alpha * op(A) * op(B) + beta * C, enqueued on the handle's stream.
#pragma once

#include <cublas_v2.h>

#include <cstdint>

#include "kernels/cpu/gemm.h"
#include "kernels/cuda/dense_math.h"

namespace xmlt::kernels::cuda {

using cpu::Op;

// A is m x k after op, B is k x n after op; lda/ldb/ldc are row strides of the stored (row-major)
// device matrices. Sizes and strides must fit in int (cuBLAS's 32-bit API); throws otherwise.
void Gemm(cublasHandle_t handle, Math math, Op op_a, Op op_b, int64_t m, int64_t n, int64_t k,
          float alpha, const float* a, int64_t lda, const float* b, int64_t ldb, float beta,
          float* c, int64_t ldc);

}  // namespace xmlt::kernels::cuda
