// cuSPARSE handles on the simulated GPUs; see include/cusparse.h.
#include <cusparse.h>

#include "gpusim/devices.h"
#include "gpusim/streams.h"

struct cusparseContext {
  int device = 0;
  cudaStream_t stream = nullptr;
};

cusparseStatus_t cusparseCreate(cusparseHandle_t* handle) {
  int device = 0;
  if (cudaGetDevice(&device) != cudaSuccess || gpusim::detail::StickyError(device) != cudaSuccess)
    return CUSPARSE_STATUS_NOT_INITIALIZED;
  *handle = new cusparseContext{device, nullptr};
  return CUSPARSE_STATUS_SUCCESS;
}

cusparseStatus_t cusparseDestroy(cusparseHandle_t handle) {
  if (handle == nullptr) return CUSPARSE_STATUS_NOT_INITIALIZED;
  delete handle;
  return CUSPARSE_STATUS_SUCCESS;
}

cusparseStatus_t cusparseSetStream(cusparseHandle_t handle, cudaStream_t stream) {
  if (handle == nullptr) return CUSPARSE_STATUS_NOT_INITIALIZED;
  if (stream != nullptr && gpusim::detail::ResolveStream(stream) == nullptr) return CUSPARSE_STATUS_INVALID_VALUE;
  handle->stream = stream;
  return CUSPARSE_STATUS_SUCCESS;
}

const char* cusparseGetErrorString(cusparseStatus_t status) {
  switch (status) {
    case CUSPARSE_STATUS_SUCCESS: return "success";
    case CUSPARSE_STATUS_NOT_INITIALIZED: return "initialization error";
    case CUSPARSE_STATUS_ALLOC_FAILED: return "out of memory";
    case CUSPARSE_STATUS_INVALID_VALUE: return "invalid value";
    case CUSPARSE_STATUS_EXECUTION_FAILED: return "execution failed";
    case CUSPARSE_STATUS_INTERNAL_ERROR: return "internal error";
    case CUSPARSE_STATUS_NOT_SUPPORTED: return "operation not supported";
  }
  return "unknown error";
}
