// vector_kernels.h for -march=x86-64-v3 (AVX2, FMA); kernels/CMakeLists.txt gives this file its flags.
#define XMLT_VECTOR_KERNELS_NS avx2
#define XMLT_VECTOR_KERNELS_TABLE kVectorKernelsAvx2
#define XMLT_VECTOR_KERNELS_NAME "avx2"
#include "kernels/cpu/vector_kernels_body.h"
