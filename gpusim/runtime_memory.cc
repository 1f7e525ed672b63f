// The CUDA runtime's memory calls over the simulated GPUs: device and pinned allocations, copies
// (host and device, between GPUs) and memsets, checked against where their pointers lie.
#include <cuda_runtime.h>

#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "gpusim/device_memory.h"
#include "gpusim/devices.h"
#include "gpusim/operation_clock.h"
#include "gpusim/runtime_errors.h"
#include "gpusim/streams.h"
#include "gpusim/timing.h"
#include "gpusim/traffic.h"

using namespace gpusim;
using namespace gpusim::detail;
using namespace gpusim::runtime;

namespace {

const char* KindName(cudaMemcpyKind kind) {
  switch (kind) {
    case cudaMemcpyHostToHost: return "HostToHost";
    case cudaMemcpyHostToDevice: return "HostToDevice";
    case cudaMemcpyDeviceToHost: return "DeviceToHost";
    case cudaMemcpyDeviceToDevice: return "DeviceToDevice";
    default: return "Default";
  }
}

// Checks both ends of a copy against its kind (inferring cudaMemcpyDefault); *gpu becomes the GPU
// whose memory is involved, or the current one for a host-to-host copy.
cudaError_t CheckCopy(const char* call, void* dst, const void* src, size_t count, cudaMemcpyKind* kind, int* gpu) {
  const Region d = Locate(dst), s = Locate(src);
  if (*kind == cudaMemcpyDefault) {
    const bool dst_device = d.space == Space::kDevice, src_device = s.space == Space::kDevice;
    *kind = src_device ? (dst_device ? cudaMemcpyDeviceToDevice : cudaMemcpyDeviceToHost)
                       : (dst_device ? cudaMemcpyHostToDevice : cudaMemcpyHostToHost);
  }
  if (int(*kind) < 0 || int(*kind) > 3) return Fail(cudaErrorInvalidMemcpyDirection);
  const bool dst_on_device = *kind == cudaMemcpyHostToDevice || *kind == cudaMemcpyDeviceToDevice;
  const bool src_on_device = *kind == cudaMemcpyDeviceToHost || *kind == cudaMemcpyDeviceToDevice;
  const std::string what = std::string(call) + " " + KindName(*kind) + " of " + std::to_string(count) + " bytes: ";
  if (dst_on_device ? !Contains(dst, count, Space::kDevice) : d.space == Space::kDevice)
    return Refuse(cudaErrorInvalidValue,
                  what + "the destination " + Describe(dst) +
                      (dst_on_device ? " does not hold them in device memory" : " is device memory"));
  if (src_on_device ? !Contains(src, count, Space::kDevice) : s.space == Space::kDevice)
    return Refuse(cudaErrorInvalidValue,
                  what + "the source " + Describe(src) +
                      (src_on_device ? " does not hold them in device memory" : " is device memory"));
  if (!dst_on_device && d.space == Space::kPinned && !Contains(dst, count, Space::kPinned))
    return Refuse(cudaErrorInvalidValue, what + "the destination " + Describe(dst) + " is too short");
  if (!src_on_device && s.space == Space::kPinned && !Contains(src, count, Space::kPinned))
    return Refuse(cudaErrorInvalidValue, what + "the source " + Describe(src) + " is too short");
  *gpu = src_on_device ? s.device : dst_on_device ? d.device : CurrentOrdinal();
  return cudaSuccess;
}

// The GPU holding `p`, or -1 for host memory.
int GpuOf(const void* p) {
  const Region r = Locate(p);
  return r.space == Space::kDevice ? r.device : -1;
}

}  // namespace

cudaError_t cudaMemGetInfo(size_t* free, size_t* total) {
  SimDevice* d = DeviceAt(CurrentOrdinal());
  if (d == nullptr) return Fail(NoDeviceOr(cudaErrorInvalidDevice));
  if (const cudaError_t sticky = ContextError(d->ordinal)) return Fail(sticky);
  *total = d->total_bytes;
  *free = d->total_bytes - UsedBytes(d->ordinal);
  return cudaSuccess;
}

cudaError_t cudaMalloc(void** ptr, size_t size) {
  *ptr = nullptr;
  const int gpu = CurrentOrdinal();
  if (DeviceAt(gpu) == nullptr) return Fail(NoDeviceOr(cudaErrorInvalidDevice));
  if (const cudaError_t sticky = ContextError(gpu)) return Fail(sticky);
  const cudaError_t status = AllocateDevice(gpu, size, ptr);
  return status == cudaSuccess ? status : Fail(status);
}

cudaError_t cudaFree(void* ptr) {
  if (ptr == nullptr) return cudaSuccess;
  const Region region = Locate(ptr);
  if (region.space != Space::kDevice || region.base != reinterpret_cast<uintptr_t>(ptr))
    return Refuse(cudaErrorInvalidValue, "cudaFree: " + Describe(ptr) + " is not the start of a device allocation");
  FlushDevice(region.device);  // cudaFree waits for the GPU, so no queued work outlives its memory
  HostAdvance(DeviceTime(region.device));
  int gpu = -1;
  const cudaError_t status = FreeDevice(ptr, &gpu);
  if (status != cudaSuccess) return Fail(status);
  const cudaError_t sticky = StickyError(gpu);
  return sticky == cudaSuccess ? sticky : Fail(sticky);
}

cudaError_t cudaMallocHost(void** ptr, size_t size) {
  ContextError(CurrentOrdinal());  // pinned memory is registered with the current device's context
  const cudaError_t status = AllocatePinned(size, ptr);
  return status == cudaSuccess ? status : Fail(status);
}

cudaError_t cudaHostAlloc(void** ptr, size_t size, unsigned flags) {
  if ((flags & ~(cudaHostAllocPortable | cudaHostAllocMapped | cudaHostAllocWriteCombined)) != 0)
    return Fail(cudaErrorInvalidValue);
  return cudaMallocHost(ptr, size);
}

cudaError_t cudaFreeHost(void* ptr) {
  if (ptr != nullptr && Locate(ptr).space != Space::kPinned)
    return Refuse(cudaErrorInvalidValue, "cudaFreeHost: " + Describe(ptr) + " is not pinned host memory");
  const cudaError_t status = FreePinned(ptr);
  return status == cudaSuccess ? status : Fail(status);
}

cudaError_t cudaMemcpy(void* dst, const void* src, size_t count, cudaMemcpyKind kind) {
  if (count == 0) return cudaSuccess;
  int gpu = 0;
  if (const cudaError_t status = CheckCopy("cudaMemcpy", dst, src, count, &kind, &gpu)) return status;
  if (const cudaError_t sticky = StickyError(gpu)) return Fail(sticky);
  const int src_gpu = GpuOf(src), dst_gpu = GpuOf(dst);
  CountCopy(src_gpu, dst_gpu, count);
  // On the null stream of the GPU holding the memory, waited for at once.
  CUstream_st* stream = LegacyStream(gpu);
  Enqueue(stream, [dst, src, count, src_gpu, dst_gpu] {
    ChargeCopy(src_gpu, dst_gpu, count);
    std::memcpy(dst, src, count);
    MarkDeviceWritten(dst, count);
  });
  const cudaError_t status = Flush(stream);
  HostAdvance(TimeAt(stream));
  return status == cudaSuccess ? status : Fail(status);
}

cudaError_t cudaMemcpyAsync(void* dst, const void* src, size_t count, cudaMemcpyKind kind, cudaStream_t handle) {
  CUstream_st* stream = ResolveStream(handle);
  if (stream == nullptr) return Fail(NoDeviceOr(cudaErrorInvalidResourceHandle));
  if (count == 0) return cudaSuccess;
  int gpu = 0;
  if (const cudaError_t status = CheckCopy("cudaMemcpyAsync", dst, src, count, &kind, &gpu)) return status;
  if (const cudaError_t sticky = StickyError(stream->device)) return Fail(sticky);
  const int src_gpu = GpuOf(src), dst_gpu = GpuOf(dst);
  CountCopy(src_gpu, dst_gpu, count);
  // As the runtime documents: a copy from pageable memory has taken its source before the call
  // returns (it is staged); a copy into pageable memory completes before the call returns. Only
  // pinned memory is read or written later, when the stream runs.
  const bool pageable_src = kind == cudaMemcpyHostToDevice && Locate(src).space == Space::kPageable;
  const bool pageable_dst = kind == cudaMemcpyDeviceToHost && Locate(dst).space == Space::kPageable;
  if (pageable_src) {
    auto staged = std::make_shared<std::vector<unsigned char>>(static_cast<const unsigned char*>(src),
                                                               static_cast<const unsigned char*>(src) + count);
    Enqueue(stream, [dst, staged, src_gpu, dst_gpu] {
      ChargeCopy(src_gpu, dst_gpu, staged->size());
      std::memcpy(dst, staged->data(), staged->size());
      MarkDeviceWritten(dst, staged->size());
    });
    return cudaSuccess;
  }
  Enqueue(stream, [dst, src, count, src_gpu, dst_gpu] {
    ChargeCopy(src_gpu, dst_gpu, count);
    std::memcpy(dst, src, count);
    MarkDeviceWritten(dst, count);
  });
  if (pageable_dst) {
    const cudaError_t status = Flush(stream);
    HostAdvance(TimeAt(stream));
    if (status != cudaSuccess) return Fail(status);
  }
  return cudaSuccess;
}

// Between two GPUs' memories, on `handle`'s stream; as on a card it works with or without peer
// access (without it the runtime stages the bytes through host memory, which the traffic counts).
cudaError_t cudaMemcpyPeerAsync(void* dst, int dst_device, const void* src, int src_device, size_t count,
                                cudaStream_t handle) {
  CUstream_st* stream = ResolveStream(handle);
  if (stream == nullptr) return Fail(NoDeviceOr(cudaErrorInvalidResourceHandle));
  if (DeviceAt(dst_device) == nullptr || DeviceAt(src_device) == nullptr)
    return Fail(NoDeviceOr(cudaErrorInvalidDevice));
  if (count == 0) return cudaSuccess;
  const std::string what = "cudaMemcpyPeerAsync of " + std::to_string(count) + " bytes: ";
  if (!Contains(dst, count, Space::kDevice, dst_device))
    return Refuse(cudaErrorInvalidValue, what + "the destination " + Describe(dst) + " does not hold them on GPU " +
                                             std::to_string(dst_device));
  if (!Contains(src, count, Space::kDevice, src_device))
    return Refuse(cudaErrorInvalidValue, what + "the source " + Describe(src) + " does not hold them on GPU " +
                                             std::to_string(src_device));
  for (const int gpu : {stream->device, dst_device, src_device})
    if (const cudaError_t sticky = StickyError(gpu)) return Fail(sticky);
  CountCopy(src_device, dst_device, count);
  Enqueue(stream, [dst, src, count, src_device, dst_device] {
    ChargeCopy(src_device, dst_device, count);
    std::memcpy(dst, src, count);
    MarkDeviceWritten(dst, count);
  });
  return cudaSuccess;
}

cudaError_t cudaMemsetAsync(void* ptr, int value, size_t count, cudaStream_t handle) {
  CUstream_st* stream = ResolveStream(handle);
  if (stream == nullptr) return Fail(NoDeviceOr(cudaErrorInvalidResourceHandle));
  if (count == 0) return cudaSuccess;
  if (!Contains(ptr, count, Space::kDevice))
    return Refuse(cudaErrorInvalidValue, "cudaMemset of " + std::to_string(count) + " bytes: " + Describe(ptr) +
                                             " does not hold them in device memory");
  if (const cudaError_t sticky = StickyError(stream->device)) return Fail(sticky);
  Enqueue(stream, [ptr, value, count, gpu = GpuOf(ptr)] {
    ChargeMemory(gpu, count);
    std::memset(ptr, value, count);
    MarkDeviceWritten(ptr, count);
  });
  return cudaSuccess;
}

cudaError_t cudaMemset(void* ptr, int value, size_t count) {
  if (const cudaError_t status = cudaMemsetAsync(ptr, value, count, nullptr)) return status;
  return cudaStreamSynchronize(nullptr);
}
