// cuSPARSE as the simulated GPUs provide it: the backend holds a handle (kernels/cuda/device_buffer.h)
// and calls nothing else, so handles and their error text are all there is.
#pragma once

#include <cuda_runtime.h>

typedef enum {
  CUSPARSE_STATUS_SUCCESS = 0,
  CUSPARSE_STATUS_NOT_INITIALIZED = 1,
  CUSPARSE_STATUS_ALLOC_FAILED = 2,
  CUSPARSE_STATUS_INVALID_VALUE = 3,
  CUSPARSE_STATUS_EXECUTION_FAILED = 6,
  CUSPARSE_STATUS_INTERNAL_ERROR = 7,
  CUSPARSE_STATUS_NOT_SUPPORTED = 10,
} cusparseStatus_t;

typedef struct cusparseContext* cusparseHandle_t;

cusparseStatus_t cusparseCreate(cusparseHandle_t* handle);
cusparseStatus_t cusparseDestroy(cusparseHandle_t handle);
cusparseStatus_t cusparseSetStream(cusparseHandle_t handle, cudaStream_t stream);
const char* cusparseGetErrorString(cusparseStatus_t status);
