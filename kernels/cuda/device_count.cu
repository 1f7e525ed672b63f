// Device count through the CUDA runtime; see device_count.h.
#include <cuda_runtime.h>

#include "kernels/cuda/device_count.h"

namespace xmlt::kernels::cuda {

int CudaDeviceCountOrZero() {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    cudaGetLastError();  // clear the error so that later, unrelated checks do not report it
    return 0;
  }
  return count;
}

}  // namespace xmlt::kernels::cuda
