// One checking macro per CUDA library: a failed call throws std::runtime_error naming the library,
// the expression, the library's error text, and the file and line of the call.
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <cusparse.h>

#include <stdexcept>
#include <string>

namespace xmlt::kernels::cuda {

[[noreturn]] inline void ThrowCudaError(const char* library, const char* expression,
                                        const char* message, const char* file, int line) {
  throw std::runtime_error(std::string(library) + " error: " + expression + " failed: " + message +
                           " (" + file + ":" + std::to_string(line) + ")");
}

}  // namespace xmlt::kernels::cuda

#define XMLT_CUDA_CHECK(expr)                                                                     \
  do {                                                                                            \
    const cudaError_t xmlt_status_ = (expr);                                                      \
    if (xmlt_status_ != cudaSuccess)                                                              \
      ::xmlt::kernels::cuda::ThrowCudaError("CUDA", #expr, cudaGetErrorString(xmlt_status_),      \
                                            __FILE__, __LINE__);                                  \
  } while (0)

// After every kernel launch: launch configuration errors surface here, not at a later sync.
#define XMLT_CUDA_CHECK_LAUNCH() XMLT_CUDA_CHECK(cudaGetLastError())

#define XMLT_CUBLAS_CHECK(expr)                                                                   \
  do {                                                                                            \
    const cublasStatus_t xmlt_status_ = (expr);                                                   \
    if (xmlt_status_ != CUBLAS_STATUS_SUCCESS)                                                    \
      ::xmlt::kernels::cuda::ThrowCudaError("cuBLAS", #expr, cublasGetStatusString(xmlt_status_), \
                                            __FILE__, __LINE__);                                  \
  } while (0)

#define XMLT_CUSPARSE_CHECK(expr)                                                                 \
  do {                                                                                            \
    const cusparseStatus_t xmlt_status_ = (expr);                                                 \
    if (xmlt_status_ != CUSPARSE_STATUS_SUCCESS)                                                  \
      ::xmlt::kernels::cuda::ThrowCudaError("cuSPARSE", #expr,                                    \
                                            cusparseGetErrorString(xmlt_status_), __FILE__,       \
                                            __LINE__);                                            \
  } while (0)

// For code that includes <nccl.h> and links NCCL itself; nothing here depends on NCCL until used.
#define XMLT_NCCL_CHECK(expr)                                                                     \
  do {                                                                                            \
    const ncclResult_t xmlt_status_ = (expr);                                                     \
    if (xmlt_status_ != ncclSuccess)                                                              \
      ::xmlt::kernels::cuda::ThrowCudaError("NCCL", #expr, ncclGetErrorString(xmlt_status_),      \
                                            __FILE__, __LINE__);                                  \
  } while (0)
