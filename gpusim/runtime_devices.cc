// The CUDA runtime's device calls over the simulated GPUs: which GPUs there are and which is
// current, their properties, synchronizing and resetting one, and peer access between them.
#include <cuda_runtime.h>

#include <atomic>
#include <cstdint>
#include <cstdio>

#include "gpusim/device_memory.h"
#include "gpusim/devices.h"
#include "gpusim/operation_clock.h"
#include "gpusim/runtime_errors.h"
#include "gpusim/streams.h"
#include "gpusim/traffic.h"

using namespace gpusim;
using namespace gpusim::detail;
using namespace gpusim::runtime;

namespace {

// Which GPUs each GPU has enabled peer access to (bit p of entry d: d may address p's memory).
std::atomic<uint64_t>& PeersEnabled(int device) {
  static std::atomic<uint64_t> enabled[64];
  return enabled[device];
}

}  // namespace

cudaError_t cudaGetDeviceCount(int* count) {
  *count = DeviceCount();
  return *count == 0 ? Fail(cudaErrorNoDevice) : cudaSuccess;
}

cudaError_t cudaGetDevice(int* device) {
  if (DeviceCount() == 0) return Fail(cudaErrorNoDevice);
  *device = CurrentOrdinal();
  return cudaSuccess;
}

cudaError_t cudaSetDevice(int device) {
  if (DeviceAt(device) == nullptr) return Fail(NoDeviceOr(cudaErrorInvalidDevice));
  CurrentOrdinal() = device;
  ContextError(device);  // CUDA 12 and later: setting the device opens its primary context
  return cudaSuccess;
}

cudaError_t cudaGetDeviceProperties(cudaDeviceProp* prop, int device) {
  SimDevice* d = DeviceAt(device);
  if (d == nullptr) return Fail(NoDeviceOr(cudaErrorInvalidDevice));
  *prop = {};
  std::snprintf(prop->name, sizeof prop->name, "simulated GPU %d", device);
  prop->totalGlobalMem = d->total_bytes;
  prop->sharedMemPerBlock = 48 << 10;
  prop->warpSize = 32;
  prop->maxThreadsPerBlock = 1024;
  prop->maxThreadsDim[0] = prop->maxThreadsDim[1] = 1024;
  prop->maxThreadsDim[2] = 64;
  prop->maxGridSize[0] = 0x7fffffff;
  prop->maxGridSize[1] = prop->maxGridSize[2] = 65535;
  prop->major = 9;  // sm_90, what CI compiles the real kernels for
  prop->minor = 0;
  prop->multiProcessorCount = 132;
  return cudaSuccess;
}

cudaError_t cudaDeviceGetAttribute(int* value, cudaDeviceAttr attr, int device) {
  cudaDeviceProp prop;
  const cudaError_t status = cudaGetDeviceProperties(&prop, device);
  if (status != cudaSuccess) return status;
  switch (attr) {
    case cudaDevAttrMaxThreadsPerBlock: *value = prop.maxThreadsPerBlock; break;
    case cudaDevAttrMaxSharedMemoryPerBlock: *value = int(prop.sharedMemPerBlock); break;
    case cudaDevAttrWarpSize: *value = prop.warpSize; break;
    case cudaDevAttrMultiProcessorCount: *value = prop.multiProcessorCount; break;
    case cudaDevAttrComputeCapabilityMajor: *value = prop.major; break;
    case cudaDevAttrComputeCapabilityMinor: *value = prop.minor; break;
    default: return Fail(cudaErrorInvalidValue);
  }
  return cudaSuccess;
}

cudaError_t cudaDeviceSynchronize() {
  if (DeviceCount() == 0) return Fail(cudaErrorNoDevice);
  const cudaError_t status = FlushDevice(CurrentOrdinal());
  HostAdvance(DeviceTime(CurrentOrdinal()));
  return status == cudaSuccess ? status : Fail(status);
}

cudaError_t cudaDeviceReset() {
  if (DeviceCount() == 0) return Fail(cudaErrorNoDevice);
  const int gpu = CurrentOrdinal();
  FlushDevice(gpu);
  FreeAllOf(gpu);
  ResetContext(gpu);
  ClearLastError();  // the lost context's error went with it
  return cudaSuccess;
}

cudaError_t cudaDeviceCanAccessPeer(int* can_access, int device, int peer_device) {
  if (DeviceAt(device) == nullptr || DeviceAt(peer_device) == nullptr) return Fail(NoDeviceOr(cudaErrorInvalidDevice));
  *can_access = device != peer_device && PeerAccessAllowed() ? 1 : 0;
  return cudaSuccess;
}

cudaError_t cudaDeviceEnablePeerAccess(int peer_device, unsigned flags) {
  const int device = CurrentOrdinal();
  if (DeviceAt(device) == nullptr || DeviceAt(peer_device) == nullptr) return Fail(NoDeviceOr(cudaErrorInvalidDevice));
  if (flags != 0) return Fail(cudaErrorInvalidValue);
  if (device == peer_device) return Fail(cudaErrorInvalidDevice);
  if (!PeerAccessAllowed()) return Fail(cudaErrorPeerAccessUnsupported);
  const uint64_t bit = uint64_t{1} << peer_device;
  if (PeersEnabled(device).fetch_or(bit) & bit) return Fail(cudaErrorPeerAccessAlreadyEnabled);
  return cudaSuccess;
}
