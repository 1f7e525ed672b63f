// One checking macro per CUDA library: a failed call throws std::runtime_error naming the library,
// the expression, the library's error text, and the file and line of the call; a CUDA error that
// leaves the context unusable throws kernels::ContextLost instead.
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <stdexcept>
#include <string>

#include "kernels/context_lost.h"

namespace xmlt::kernels::cuda {

// The CUDA runtime's sticky errors: after one, every call in the process's context on that GPU
// fails until the process ends (the runtime's error reference says so of each 7xx one listed), so the
// other logical devices of the GPU cannot go on; after an uncorrectable ECC error (214) nothing in
// the GPU's memory can be trusted either. Other errors (a bad argument, out of memory) leave the
// context usable.
inline bool IsStickyCudaError(cudaError_t status) {
  switch (status) {
    case cudaErrorECCUncorrectable:      // 214
    case cudaErrorIllegalAddress:        // 700
    case cudaErrorLaunchTimeout:         // 702
    case cudaErrorAssert:                // 710
    case cudaErrorHardwareStackError:    // 714
    case cudaErrorIllegalInstruction:    // 715
    case cudaErrorMisalignedAddress:     // 716
    case cudaErrorInvalidAddressSpace:   // 717
    case cudaErrorInvalidPc:             // 718
    case cudaErrorLaunchFailure:         // 719
      return true;
    default:
      return false;
  }
}

[[noreturn]] inline void ThrowCudaError(const char* library, const char* expression,
                                        const char* message, const char* file, int line) {
  throw std::runtime_error(std::string(library) + " error: " + expression + " failed: " + message +
                           " (" + file + ":" + std::to_string(line) + ")");
}

[[noreturn]] inline void ThrowCudaRuntimeError(cudaError_t status, const char* expression,
                                               const char* file, int line) {
  // The exception reports the error: the runtime's copy of it as the thread's last error goes, or
  // a caller that handles the exception (a lost GPU dropped, a failed allocation refused) would
  // see it again at its next launch check, on another GPU perhaps.
  (void)cudaGetLastError();
  if (IsStickyCudaError(status)) {
    int ordinal = -1;  // the calling thread's current GPU, where the error happened
    const std::string gpu = cudaGetDevice(&ordinal) == cudaSuccess ? "GPU " + std::to_string(ordinal) : "its GPU";
    throw ContextLost("CUDA error: " + std::string(expression) + " failed: " + cudaGetErrorName(status) +
                      ": " + cudaGetErrorString(status) + " (" + file + ":" + std::to_string(line) +
                      "); the CUDA context of " + gpu + " is lost");
  }
  ThrowCudaError("CUDA", expression, cudaGetErrorString(status), file, line);
}

// A failed cuBLAS call in a context already lost by a sticky error (the library's
// kernels cannot launch: CUBLAS_STATUS_EXECUTION_FAILED and the like) is that lost context, not an
// ordinary library error: the runtime's last error says which.
[[noreturn]] inline void ThrowLibraryError(const char* library, const char* expression, const char* message,
                                           const char* file, int line) {
  const cudaError_t pending = cudaPeekAtLastError();
  if (IsStickyCudaError(pending)) ThrowCudaRuntimeError(pending, expression, file, line);
  ThrowCudaError(library, expression, message, file, line);
}

// For a call whose failure is deliberately not reported (a release in a destructor, a query that
// only asks whether a context is lost): the runtime keeps its error as the calling thread's last
// error, and the next launch check (cudaGetLastError) would report it as its own, on whichever GPU
// that launch runs. A release on a lost GPU would thus fail the survivors' next kernel, naming
// their GPU. The error is taken back here.
inline void ForgetUnreportedError(cudaError_t status) {
  if (status != cudaSuccess) (void)cudaGetLastError();
}

}  // namespace xmlt::kernels::cuda

#define XMLT_CUDA_CHECK(expr)                                                                     \
  do {                                                                                            \
    const cudaError_t xmlt_status_ = (expr);                                                      \
    if (xmlt_status_ != cudaSuccess)                                                              \
      ::xmlt::kernels::cuda::ThrowCudaRuntimeError(xmlt_status_, #expr, __FILE__, __LINE__);      \
  } while (0)

// After every kernel launch: launch configuration errors surface here, not at a later sync.
#define XMLT_CUDA_CHECK_LAUNCH() XMLT_CUDA_CHECK(cudaGetLastError())

#define XMLT_CUBLAS_CHECK(expr)                                                                   \
  do {                                                                                            \
    const cublasStatus_t xmlt_status_ = (expr);                                                   \
    if (xmlt_status_ != CUBLAS_STATUS_SUCCESS)                                                    \
      ::xmlt::kernels::cuda::ThrowLibraryError("cuBLAS", #expr, cublasGetStatusString(xmlt_status_), \
                                               __FILE__, __LINE__);                               \
  } while (0)

// For code that includes <nccl.h> and links NCCL itself; nothing here depends on NCCL until used.
#define XMLT_NCCL_CHECK(expr)                                                                     \
  do {                                                                                            \
    const ncclResult_t xmlt_status_ = (expr);                                                     \
    if (xmlt_status_ != ncclSuccess)                                                              \
      ::xmlt::kernels::cuda::ThrowCudaError("NCCL", #expr, ncclGetErrorString(xmlt_status_),      \
                                            __FILE__, __LINE__);                                  \
  } while (0)
