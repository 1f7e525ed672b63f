// Dense matrix products for the CPU backend: row-major C = alpha * op(A) * op(B) + beta * C,
// tiled over the rows and columns of C and run in parallel with TBB, each tile a serial BLAS call.
// TBB owns all parallelism, so several CPU devices can train side by side without oversubscribing.
#pragma once

#include <cstdint>

#include "kernels/cpu/gemm_op.h"

namespace xmlt::kernels::cpu {

// A is m x k after op, B is k x n after op; lda/ldb/ldc are row strides of the stored matrices.
template <class T>
void Gemm(Op op_a, Op op_b, int64_t m, int64_t n, int64_t k, T alpha, const T* a, int64_t lda,
          const T* b, int64_t ldb, T beta, T* c, int64_t ldc);

// The same product as one BLAS call on the calling thread, for kernels that already run blocks
// of their own in parallel.
template <class T>
void GemmOneThread(Op op_a, Op op_b, int64_t m, int64_t n, int64_t k, T alpha, const T* a,
                   int64_t lda, const T* b, int64_t ldb, T beta, T* c, int64_t ldc);

}  // namespace xmlt::kernels::cpu
