// direct_gemm.h for -march=x86-64-v4 (AVX-512 F/BW/DQ/VL); kernels/CMakeLists.txt gives this file
// its flags.
#define XMLT_DIRECT_GEMM_NS avx512
#define XMLT_DIRECT_GEMM_TABLE kDirectGemmAvx512
#define XMLT_DIRECT_GEMM_NAME "avx512"
#include "kernels/cpu/direct_gemm_body.h"
