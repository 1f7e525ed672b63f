// vector_kernels.h for -march=x86-64 (SSE2); kernels/CMakeLists.txt gives this file its flags.
#define XMLT_VECTOR_KERNELS_NS baseline
#define XMLT_VECTOR_KERNELS_TABLE kVectorKernelsBaseline
#define XMLT_VECTOR_KERNELS_NAME "baseline"
#include "kernels/cpu/vector_kernels_body.h"
