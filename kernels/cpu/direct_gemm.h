// Float products that read their operands where they lie, with no packing: row-major
// C = alpha * op(A) * B + beta * C, op(A) = A or A^T, B untransposed. A register tile of C (rows
// of A broadcast, columns of B in vectors) runs over all of k at once.
//
// Why: the fused output layer's three products per 512-label block (k = 128, 256 or 512) are too
// short for a library's packing to pay. OpenBLAS and oneDNN copy both operands of every call into
// panels and clear C before a beta-0 product, a sizeable share of the AVX-512 step's time beside
// the GEMM kernels themselves (measured: docs/benchmarks/isa.md, second round). Here the input
// gradient (D W) and the weight gradient (D^T A) need no copy at all, and the logits (A W^T) one
// transposition of the block's weights into a buffer of the calling thread (kernels/cpu/gemm.cc).
// Inside the step only the logits ran faster than on the libraries, and gemm.cc's default takes
// them for those alone (measured: docs/benchmarks/isa.md, fourth round).
//
// Compiled once per vector ISA (direct_gemm_{avx2,avx512}.cc from direct_gemm_body.h); the
// baseline ISA has none and keeps the BLAS.
#pragma once

#include <cstdint>

#include "kernels/cpu/cpu_isa.h"
#include "kernels/cpu/gemm_op.h"

namespace xmlt::kernels::cpu {

struct DirectGemmKernels {
  const char* isa;
  // C (m x n, row stride ldc) = alpha * op(A) * B + beta * C. op(A) is m x k: A[i * lda + p] for
  // Op::kNone, A[p * lda + i] for Op::kTranspose; B[p * ldb + j] is k x n. With beta 0, C is
  // only written (NaNs in it do not carry over), as the BLAS does.
  void (*gemm)(Op op_a, int64_t m, int64_t n, int64_t k, float alpha, const float* a, int64_t lda,
               const float* b, int64_t ldb, float beta, float* c, int64_t ldc);
  // dst[p * ld_dst + i] = src[i * ld_src + p] for i < rows, p < cols: dst is src^T (cols x rows).
  void (*transpose)(const float* src, int64_t rows, int64_t cols, int64_t ld_src, float* dst,
                    int64_t ld_dst);
};

extern const DirectGemmKernels kDirectGemmAvx2;
extern const DirectGemmKernels kDirectGemmAvx512;

// The direct kernels of `isa`; nullptr for the baseline ISA, which has none.
const DirectGemmKernels* DirectGemmKernelsFor(CpuIsa isa);

// C = alpha * op(A) * op(B) + beta * C on `kernels`, strides as in gemm.h. A transposed B (stored
// n x k) is first transposed into a buffer of the calling thread, which keeps it for the next call.
void DirectGemm(const DirectGemmKernels& kernels, Op op_a, Op op_b, int64_t m, int64_t n, int64_t k, float alpha,
                const float* a, int64_t lda, const float* b, int64_t ldb, float beta, float* c, int64_t ldc);

}  // namespace xmlt::kernels::cpu
