// The CUDA runtime calls (include/cuda_runtime.h) over the simulated devices, memory and streams.
#include <cuda_runtime.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "gpusim/device_memory.h"
#include "gpusim/devices.h"
#include "gpusim/streams.h"
#include "gpusim/timing.h"
#include "gpusim/traffic.h"

using namespace gpusim;
using namespace gpusim::detail;

namespace {

struct ErrorText {
  cudaError_t code;
  const char* name;
  const char* text;
};

// The runtime's own names and descriptions.
constexpr ErrorText kErrors[] = {
    {cudaSuccess, "cudaSuccess", "no error"},
    {cudaErrorInvalidValue, "cudaErrorInvalidValue", "invalid argument"},
    {cudaErrorMemoryAllocation, "cudaErrorMemoryAllocation", "out of memory"},
    {cudaErrorInitializationError, "cudaErrorInitializationError", "initialization error"},
    {cudaErrorInvalidConfiguration, "cudaErrorInvalidConfiguration", "invalid configuration argument"},
    {cudaErrorInvalidDevicePointer, "cudaErrorInvalidDevicePointer", "invalid device pointer"},
    {cudaErrorInvalidMemcpyDirection, "cudaErrorInvalidMemcpyDirection", "invalid copy direction for memcpy"},
    {cudaErrorInsufficientDriver, "cudaErrorInsufficientDriver",
     "CUDA driver version is insufficient for CUDA runtime version"},
    {cudaErrorNoDevice, "cudaErrorNoDevice", "no CUDA-capable device is detected"},
    {cudaErrorInvalidDevice, "cudaErrorInvalidDevice", "invalid device ordinal"},
    {cudaErrorECCUncorrectable, "cudaErrorECCUncorrectable", "uncorrectable ECC error encountered"},
    {cudaErrorPeerAccessUnsupported, "cudaErrorPeerAccessUnsupported", "peer access is not supported between these two devices"},
    {cudaErrorPeerAccessAlreadyEnabled, "cudaErrorPeerAccessAlreadyEnabled", "peer access is already enabled"},
    {cudaErrorInvalidResourceHandle, "cudaErrorInvalidResourceHandle", "invalid resource handle"},
    {cudaErrorNotReady, "cudaErrorNotReady", "device not ready"},
    {cudaErrorIllegalAddress, "cudaErrorIllegalAddress", "an illegal memory access was encountered"},
    {cudaErrorLaunchOutOfResources, "cudaErrorLaunchOutOfResources", "too many resources requested for launch"},
    {cudaErrorLaunchTimeout, "cudaErrorLaunchTimeout", "the launch timed out and was terminated"},
    {cudaErrorAssert, "cudaErrorAssert", "device-side assert triggered"},
    {cudaErrorHardwareStackError, "cudaErrorHardwareStackError", "hardware stack error"},
    {cudaErrorIllegalInstruction, "cudaErrorIllegalInstruction", "an illegal instruction was encountered"},
    {cudaErrorMisalignedAddress, "cudaErrorMisalignedAddress", "misaligned address"},
    {cudaErrorInvalidAddressSpace, "cudaErrorInvalidAddressSpace",
     "operation not supported on global/shared address space"},
    {cudaErrorInvalidPc, "cudaErrorInvalidPc", "invalid program counter"},
    {cudaErrorLaunchFailure, "cudaErrorLaunchFailure", "unspecified launch failure"},
    {cudaErrorUnknown, "cudaErrorUnknown", "unknown error"},
};

const ErrorText* Lookup(cudaError_t error) {
  for (const ErrorText& e : kErrors)
    if (e.code == error) return &e;
  return nullptr;
}

cudaError_t Fail(cudaError_t error) {
  SetLastError(error);
  return error;
}

// A refused call says why on stderr: the error code alone would not tell which pointer was wrong.
cudaError_t Refuse(cudaError_t error, const std::string& why) {
  std::fprintf(stderr, "gpusim: %s\n", why.c_str());
  return Fail(error);
}

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
    return Refuse(cudaErrorInvalidValue, what + "the destination " + Describe(dst) +
                                             (dst_on_device ? " does not hold them in device memory" : " is device memory"));
  if (src_on_device ? !Contains(src, count, Space::kDevice) : s.space == Space::kDevice)
    return Refuse(cudaErrorInvalidValue, what + "the source " + Describe(src) +
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

// Which GPUs each GPU has enabled peer access to (bit p of entry d: d may address p's memory).
std::atomic<uint64_t>& PeersEnabled(int device) {
  static std::atomic<uint64_t> enabled[64];
  return enabled[device];
}

cudaError_t NoDeviceOr(cudaError_t otherwise) {
  return DeviceCount() == 0 ? cudaErrorNoDevice : otherwise;
}

}  // namespace

const char* cudaGetErrorName(cudaError_t error) {
  const ErrorText* e = Lookup(error);
  return e != nullptr ? e->name : "cudaErrorUnknown";
}

const char* cudaGetErrorString(cudaError_t error) {
  const ErrorText* e = Lookup(error);
  return e != nullptr ? e->text : "unrecognized error code";
}

cudaError_t cudaGetLastError() { return TakeLastError(); }
cudaError_t cudaPeekAtLastError() { return PeekLastError(); }

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
  CUstream_st* stream = DeviceAt(gpu)->legacy_stream;
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
  if (DeviceAt(dst_device) == nullptr || DeviceAt(src_device) == nullptr) return Fail(NoDeviceOr(cudaErrorInvalidDevice));
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

cudaError_t cudaStreamCreateWithFlags(cudaStream_t* stream, unsigned flags) {
  const int gpu = CurrentOrdinal();
  if (DeviceAt(gpu) == nullptr) return Fail(NoDeviceOr(cudaErrorInvalidDevice));
  if (flags & ~cudaStreamNonBlocking) return Fail(cudaErrorInvalidValue);
  if (const cudaError_t sticky = ContextError(gpu)) return Fail(sticky);
  *stream = CreateStream(gpu, flags);
  return cudaSuccess;
}

cudaError_t cudaStreamCreate(cudaStream_t* stream) { return cudaStreamCreateWithFlags(stream, cudaStreamDefault); }

cudaError_t cudaStreamDestroy(cudaStream_t handle) {
  CUstream_st* stream = handle == nullptr ? nullptr : ResolveStream(handle);
  if (stream == nullptr) return Fail(cudaErrorInvalidResourceHandle);
  DestroyStream(stream);
  return cudaSuccess;
}

cudaError_t cudaStreamSynchronize(cudaStream_t handle) {
  CUstream_st* stream = ResolveStream(handle);
  if (stream == nullptr) return Fail(NoDeviceOr(cudaErrorInvalidResourceHandle));
  const cudaError_t status = Flush(stream);
  HostAdvance(TimeAt(stream));
  return status == cudaSuccess ? status : Fail(status);
}

cudaError_t cudaStreamQuery(cudaStream_t handle) {
  CUstream_st* stream = ResolveStream(handle);
  if (stream == nullptr) return Fail(NoDeviceOr(cudaErrorInvalidResourceHandle));
  if (const cudaError_t sticky = StickyError(stream->device)) return Fail(sticky);
  return Idle(stream) ? cudaSuccess : cudaErrorNotReady;
}

cudaError_t cudaStreamWaitEvent(cudaStream_t handle, cudaEvent_t event, unsigned flags) {
  CUstream_st* stream = ResolveStream(handle);
  if (stream == nullptr || !IsLiveEvent(event)) return Fail(cudaErrorInvalidResourceHandle);
  if (flags != 0) return Fail(cudaErrorInvalidValue);
  CUstream_st* other = event->stream;
  const uint64_t position = event->position;
  if (other == nullptr || other == stream) return cudaSuccess;
  Enqueue(stream, [other, position] {
    Flush(other, position);
    After(TimeAt(other, position));
  });
  return cudaSuccess;
}

cudaError_t cudaEventCreateWithFlags(cudaEvent_t* event, unsigned flags) {
  const int gpu = CurrentOrdinal();
  if (DeviceAt(gpu) == nullptr) return Fail(NoDeviceOr(cudaErrorInvalidDevice));
  if (flags & ~(cudaEventBlockingSync | cudaEventDisableTiming)) return Fail(cudaErrorInvalidValue);
  ContextError(gpu);
  *event = CreateEvent(gpu, flags);
  return cudaSuccess;
}

cudaError_t cudaEventCreate(cudaEvent_t* event) { return cudaEventCreateWithFlags(event, cudaEventDefault); }

cudaError_t cudaEventDestroy(cudaEvent_t event) {
  if (!IsLiveEvent(event)) return Fail(cudaErrorInvalidResourceHandle);
  DestroyEvent(event);
  return cudaSuccess;
}

cudaError_t cudaEventRecord(cudaEvent_t event, cudaStream_t handle) {
  CUstream_st* stream = ResolveStream(handle);
  if (stream == nullptr || !IsLiveEvent(event)) return Fail(cudaErrorInvalidResourceHandle);
  if (const cudaError_t sticky = StickyError(stream->device)) return Fail(sticky);
  std::lock_guard<std::mutex> lock(stream->queue);
  event->stream = stream;
  event->position = stream->submitted;
  return cudaSuccess;
}

cudaError_t cudaEventSynchronize(cudaEvent_t event) {
  if (!IsLiveEvent(event)) return Fail(cudaErrorInvalidResourceHandle);
  if (event->stream == nullptr) return StickyError(event->device) == cudaSuccess ? cudaSuccess : Fail(StickyError(event->device));
  const cudaError_t status = Flush(event->stream, event->position);
  HostAdvance(TimeAt(event->stream, event->position));
  return status == cudaSuccess ? status : Fail(status);
}

cudaError_t cudaEventQuery(cudaEvent_t event) {
  if (!IsLiveEvent(event)) return Fail(cudaErrorInvalidResourceHandle);
  if (const cudaError_t sticky = StickyError(event->device)) return Fail(sticky);
  if (event->stream == nullptr) return cudaSuccess;
  return Idle(event->stream, event->position) ? cudaSuccess : cudaErrorNotReady;
}
