// Lazily executed streams; see streams.h.
#include "gpusim/streams.h"

#include <algorithm>
#include <set>
#include <vector>

#include "gpusim/devices.h"
#include "gpusim/operation_clock.h"

namespace gpusim::detail {
namespace {

struct Handles {
  std::mutex mutex;
  std::set<CUstream_st*> streams;
  std::set<CUevent_st*> events;
};

Handles& State() {
  static Handles* h = new Handles;
  return *h;
}

std::vector<CUstream_st*> StreamsOf(int device, bool blocking_only) {
  Handles& h = State();
  std::lock_guard<std::mutex> lock(h.mutex);
  std::vector<CUstream_st*> out;
  for (CUstream_st* s : h.streams)
    if (s->device == device && !s->legacy() && (!blocking_only || s->blocking())) out.push_back(s);
  return out;
}

bool Done(CUstream_st* stream, uint64_t position) {
  std::lock_guard<std::mutex> lock(stream->queue);
  return stream->pending.empty() || stream->completed >= position;
}

// Runs the stream's work up to `position`; the caller holds stream->run.
void RunHeld(CUstream_st* stream, uint64_t position) {
  for (;;) {
    std::function<void()> op;
    {
      std::lock_guard<std::mutex> lock(stream->queue);
      if (stream->pending.empty() || stream->completed >= position) return;
      op = std::move(stream->pending.front());
      stream->pending.pop_front();
    }
    // Its virtual clock starts where the stream's previous operation ended.
    OpClock clock;
    {
      std::lock_guard<std::mutex> lock(stream->queue);
      clock.start = clock.end = stream->finished.empty() ? 0.0 : stream->finished.back();
    }
    OpClock* outer = EnterOp(&clock);
    // After a lost context the GPU runs nothing more.
    if (StickyError(stream->device) == cudaSuccess) op();
    LeaveOp(&clock, outer);
    std::lock_guard<std::mutex> lock(stream->queue);
    stream->finished.push_back(clock.end);
    ++stream->completed;
  }
}

void RunUpTo(CUstream_st* stream, uint64_t position) {
  // Checked before taking the run lock: a stream's operation may wait (through another stream's
  // event wait) for an earlier position of this very stream, which has run already; a ring of
  // GPUs, each waiting for its neighbour's previous step, does this on every step.
  if (Done(stream, position)) return;
  std::lock_guard<std::mutex> running(stream->run);
  RunHeld(stream, position);
}

}  // namespace

CUstream_st* CreateStream(int device, unsigned flags) {
  auto* s = new CUstream_st;
  s->device = device;
  s->flags = flags;
  Handles& h = State();
  std::lock_guard<std::mutex> lock(h.mutex);
  h.streams.insert(s);
  return s;
}

void DestroyStream(CUstream_st* stream) {
  Flush(stream);  // the work already enqueued still runs, as on a card
  Handles& h = State();
  {
    std::lock_guard<std::mutex> lock(h.mutex);
    h.streams.erase(stream);
    for (CUevent_st* e : h.events)
      if (e->stream == stream) e->stream = nullptr;  // complete: its work has run
  }
  // Not deleted: another host thread synchronizing the whole GPU may still hold the pointer. A
  // destroyed handle is refused by ResolveStream all the same.
}

CUstream_st* LegacyStream(int device) {
  // Made for every GPU at once, at the first call for any.
  static const std::vector<CUstream_st*>* legacy = [] {
    auto* streams = new std::vector<CUstream_st*>;
    for (int d = 0; d < DeviceCount(); ++d) streams->push_back(CreateStream(d, cudaStreamLegacyFlag));
    return streams;
  }();
  return device >= 0 && device < int(legacy->size()) ? (*legacy)[size_t(device)] : nullptr;
}

CUstream_st* ResolveStream(CUstream_st* handle) {
  if (handle == nullptr) return LegacyStream(CurrentOrdinal());
  Handles& h = State();
  std::lock_guard<std::mutex> lock(h.mutex);
  return h.streams.count(handle) > 0 ? handle : nullptr;
}

CUevent_st* CreateEvent(int device, unsigned flags) {
  auto* e = new CUevent_st;
  e->device = device;
  e->flags = flags;
  Handles& h = State();
  std::lock_guard<std::mutex> lock(h.mutex);
  h.events.insert(e);
  return e;
}

bool IsLiveEvent(CUevent_st* event) {
  Handles& h = State();
  std::lock_guard<std::mutex> lock(h.mutex);
  return h.events.count(event) > 0;
}

void DestroyEvent(CUevent_st* event) {
  Handles& h = State();
  std::lock_guard<std::mutex> lock(h.mutex);
  h.events.erase(event);  // not deleted, as a stream is not
}

void Enqueue(CUstream_st* stream, std::function<void()> op) {
  // Legacy semantics: a blocking stream's work waits for the null stream's earlier work, and the
  // null stream's for every blocking stream's.
  if (stream->blocking()) {
    CUstream_st* legacy = LegacyStream(stream->device);
    std::vector<std::pair<CUstream_st*, uint64_t>> before;
    if (stream->legacy()) {
      for (CUstream_st* s : StreamsOf(stream->device, true)) {
        std::lock_guard<std::mutex> lock(s->queue);
        before.emplace_back(s, s->submitted);
      }
    } else if (legacy != nullptr) {
      std::lock_guard<std::mutex> lock(legacy->queue);
      before.emplace_back(legacy, legacy->submitted);
    }
    if (!before.empty()) {
      op = [before, inner = std::move(op)] {
        for (const auto& [s, position] : before) {
          RunUpTo(s, position);
          After(TimeAt(s, position));
        }
        inner();
      };
    }
  }
  // Nothing starts before the host issued it, which is after what it last waited for.
  op = [issued = HostNow(), inner = std::move(op)] {
    After(issued);
    inner();
  };
  std::lock_guard<std::mutex> lock(stream->queue);
  stream->pending.push_back(std::move(op));
  ++stream->submitted;
}

cudaError_t Flush(CUstream_st* stream, uint64_t position) {
  RunUpTo(stream, position);
  return StickyError(stream->device);
}

bool TryFlush(CUstream_st* stream, uint64_t position) {
  if (Done(stream, position)) return true;
  std::unique_lock<std::mutex> running(stream->run, std::try_to_lock);
  if (!running.owns_lock()) return false;
  RunHeld(stream, position);
  return Done(stream, position);
}

cudaError_t FlushDevice(int device) {
  CUstream_st* legacy = LegacyStream(device);
  if (legacy == nullptr) return cudaErrorInvalidDevice;
  Flush(legacy);
  for (CUstream_st* s : StreamsOf(device, false)) Flush(s);
  return StickyError(device);
}

bool Idle(CUstream_st* stream, uint64_t position) { return Done(stream, position); }

double TimeAt(CUstream_st* stream, uint64_t position) {
  std::lock_guard<std::mutex> lock(stream->queue);
  const uint64_t done = std::min<uint64_t>(position, stream->finished.size());
  return done == 0 ? 0.0 : stream->finished[done - 1];
}

double DeviceTime(int device) {
  CUstream_st* legacy = LegacyStream(device);
  if (legacy == nullptr) return 0;
  double latest = TimeAt(legacy);
  for (CUstream_st* s : StreamsOf(device, false)) latest = std::max(latest, TimeAt(s));
  return latest;
}

void ResetStreamClocks() {
  Handles& h = State();
  std::lock_guard<std::mutex> lock(h.mutex);
  for (CUstream_st* s : h.streams) {
    std::lock_guard<std::mutex> queue(s->queue);
    std::fill(s->finished.begin(), s->finished.end(), 0.0);
  }
}

}  // namespace gpusim::detail

