// Products with bfloat16 inputs and fp32 accumulation and results, on the calling thread, for the
// output layer's --math bf16. They run on oneDNN's matmul, which uses AMX tiles where the CPU has
// them and AVX-512 BF16 dot products otherwise; how much either gains on fp32 depends on the CPU
// (measured: docs/benchmarks/full-shapes.md). The fp32 masters are converted here; nothing outside
// this file sees a bfloat16 type.
#pragma once

#include <cstdint>
#include <string>

#include "kernels/cpu/gemm.h"

namespace xmlt::kernels::cpu {

using Bf16 = uint16_t;  // the upper half of an IEEE float

// Round to nearest even, as the hardware's conversions do; NaN stays NaN.
Bf16 FloatToBf16(float value);
float Bf16ToFloat(Bf16 value);
void ConvertToBf16(const float* in, uint64_t count, Bf16* out);

// Whether this build and CPU run bf16 products natively; otherwise `why` says what is missing.
bool Bf16Available(std::string* why);

// The instruction set oneDNN uses for them ("avx512_core_amx", "avx512_core_bf16", ...).
std::string Bf16Isa();

// Row-major C = op(A) * op(B) + (accumulate ? C : 0), A m x k and B k x n after op, A and B in
// bfloat16, C in fp32; lda/ldb/ldc are the stored row strides. Runs on the calling thread: callers
// parallelize over blocks. Throws std::runtime_error when Bf16Available is false.
void Bf16GemmOneThread(Op op_a, Op op_b, int64_t m, int64_t n, int64_t k, const Bf16* a,
                       int64_t lda, const Bf16* b, int64_t ldb, bool accumulate, float* c,
                       int64_t ldc);

}  // namespace xmlt::kernels::cpu
