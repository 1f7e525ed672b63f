// direct_gemm.h for -march=x86-64-v3 (AVX2, FMA); kernels/CMakeLists.txt gives this file its flags.
#define XMLT_DIRECT_GEMM_NS avx2
#define XMLT_DIRECT_GEMM_TABLE kDirectGemmAvx2
#define XMLT_DIRECT_GEMM_NAME "avx2"
#include "kernels/cpu/direct_gemm_body.h"
