// Device count through the CUDA runtime; see device_count.h.
#include <cuda_runtime.h>

#include "kernels/cuda/device_count.h"

namespace xmlt::kernels::cuda {
namespace {

cudaError_t CountDevices(int* count) {
  *count = 0;
  const cudaError_t status = cudaGetDeviceCount(count);
  if (status != cudaSuccess) {
    cudaGetLastError();  // clear the error so that later, unrelated checks do not report it
    *count = 0;
  }
  return status;
}

}  // namespace

int CudaDeviceCountOrZero() {
  int count = 0;
  CountDevices(&count);
  return count;
}

std::string CudaUnavailableReason() {
  int count = 0;
  const cudaError_t status = CountDevices(&count);
  if (status != cudaSuccess)
    return std::string(cudaGetErrorName(status)) + ": " + cudaGetErrorString(status);
  return count > 0 ? "" : "the CUDA runtime reports 0 devices";
}

}  // namespace xmlt::kernels::cuda
