// Peer access between two GPUs; see peer_access.h.
#include "merge/gpu/peer_access.h"

#include <cuda_runtime.h>

#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/device_buffer.h"

namespace xmlt::merge::gpu {

bool EnablePeerAccess(int device, int peer) {
  int can = 0;
  XMLT_CUDA_CHECK(cudaDeviceCanAccessPeer(&can, device, peer));
  if (!can) return false;
  kernels::cuda::DeviceGuard guard(device);
  const cudaError_t status = cudaDeviceEnablePeerAccess(peer, 0);
  if (status == cudaErrorPeerAccessAlreadyEnabled) {
    cudaGetLastError();  // enabled by an earlier merge or pair: fine
  } else {
    XMLT_CUDA_CHECK(status);
  }
  return true;
}

}  // namespace xmlt::merge::gpu
