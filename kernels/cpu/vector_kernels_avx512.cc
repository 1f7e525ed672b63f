// vector_kernels.h for -march=x86-64-v4 -mprefer-vector-width=512 (AVX-512 F/BW/DQ/VL, full-width
// vectors); kernels/CMakeLists.txt gives this file its flags.
#define XMLT_VECTOR_KERNELS_NS avx512
#define XMLT_VECTOR_KERNELS_TABLE kVectorKernelsAvx512
#define XMLT_VECTOR_KERNELS_NAME "avx512"
#include "kernels/cpu/vector_kernels_body.h"
