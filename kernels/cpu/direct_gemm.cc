// The ISA's direct kernels and the transposition of B before them; see direct_gemm.h.
#include "kernels/cpu/direct_gemm.h"

#include <vector>

namespace xmlt::kernels::cpu {

const DirectGemmKernels* DirectGemmKernelsFor(CpuIsa isa) {
  switch (isa) {
    case CpuIsa::kAvx512: return &kDirectGemmAvx512;
    case CpuIsa::kAvx2: return &kDirectGemmAvx2;
    case CpuIsa::kBaseline: return nullptr;
  }
  return nullptr;
}

void DirectGemm(const DirectGemmKernels& kernels, Op op_a, Op op_b, int64_t m, int64_t n, int64_t k, float alpha,
                const float* a, int64_t lda, const float* b, int64_t ldb, float beta, float* c, int64_t ldc) {
  if (op_b == Op::kTranspose && k > 0) {
    // Rows a cache line longer than n's multiple of 16: at 512 labels a row stride of 2 KiB
    // would put every row's same column in the same two sets of L1 (the transposition alone
    // was 17% slower with it).
    const int64_t ld = (n + 15) / 16 * 16 + 16;
    thread_local std::vector<float> transposed;
    if (transposed.size() < size_t(ld * k)) transposed.resize(size_t(ld * k));
    kernels.transpose(b, n, k, ldb, transposed.data(), ld);
    b = transposed.data(), ldb = ld;
  }
  kernels.gemm(op_a, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

}  // namespace xmlt::kernels::cpu
