// Streams and events. Work on a stream runs in its order, lazily: it executes only when something
// waits for it (a stream or event synchronization, cudaDeviceSynchronize, a blocking copy,
// cudaFree, another stream waiting on its event). So a missing synchronization is not a race that
// passes most of the time: the host reads stale results on every run.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <vector>

#include "gpusim/error_codes.h"

// Internal: the null stream of each GPU (waits for, and is waited for by, blocking streams).
constexpr unsigned cudaStreamLegacyFlag = 0x80000000u;

struct CUstream_st {
  int device = 0;
  unsigned flags = 0;
  std::mutex run;  // held while this stream's work executes: one executor at a time, in order
  std::mutex queue;
  std::deque<std::function<void()>> pending;
  uint64_t submitted = 0;  // operations enqueued so far
  uint64_t completed = 0;  // operations executed (or dropped after a lost context)
  // Virtual time (timing.h), in seconds: when each executed operation finished, in order.
  std::vector<double> finished;

  bool legacy() const { return (flags & cudaStreamLegacyFlag) != 0; }
  bool blocking() const { return (flags & 1u) == 0; }
};

struct CUevent_st {
  int device = 0;
  unsigned flags = 0;
  CUstream_st* stream = nullptr;  // where it was last recorded; null: never recorded
  uint64_t position = 0;          // the stream's operations before the record
};

namespace gpusim::detail {

CUstream_st* CreateStream(int device, unsigned flags);
void DestroyStream(CUstream_st* stream);
// The null stream of GPU `device`, or null for no such GPU.
CUstream_st* LegacyStream(int device);
// The stream a handle means (null: the current GPU's null stream), or null for a handle that is
// not a live stream.
CUstream_st* ResolveStream(CUstream_st* handle);
bool IsLiveEvent(CUevent_st* event);
CUevent_st* CreateEvent(int device, unsigned flags);
void DestroyEvent(CUevent_st* event);

// Enqueues `op`; it runs, in order, when the stream is flushed, unless the GPU's context is lost
// by then.
void Enqueue(CUstream_st* stream, std::function<void()> op);
// Runs the stream's work up to its `position`-th operation (all of it by default), with the
// implicit synchronization between the null stream and blocking streams. Returns the GPU's sticky
// error, if any.
cudaError_t Flush(CUstream_st* stream, uint64_t position = UINT64_MAX);
// Flush, unless another host thread is running the stream's work: then returns false at once.
// True when the stream has run up to `position`.
bool TryFlush(CUstream_st* stream, uint64_t position);
// All work on every stream of a GPU.
cudaError_t FlushDevice(int device);
bool Idle(CUstream_st* stream, uint64_t position = UINT64_MAX);

// The virtual time (timing.h) at which the stream's first `position` operations had finished (of
// those executed so far).
double TimeAt(CUstream_st* stream, uint64_t position = UINT64_MAX);
// The latest such time over a GPU's streams.
double DeviceTime(int device);
// Every stream's virtual times back to zero (timing.h's reset).
void ResetStreamClocks();

}  // namespace gpusim::detail
