// The CUDA runtime's stream and event calls over the simulated GPUs (streams.h runs the streams).
#include <cuda_runtime.h>

#include <cstdint>
#include <mutex>

#include "gpusim/devices.h"
#include "gpusim/operation_clock.h"
#include "gpusim/runtime_errors.h"
#include "gpusim/streams.h"

using namespace gpusim;
using namespace gpusim::detail;
using namespace gpusim::runtime;

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
  if (event->stream == nullptr)
    return StickyError(event->device) == cudaSuccess ? cudaSuccess : Fail(StickyError(event->device));
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
