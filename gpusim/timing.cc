// The virtual clock of the simulated GPUs; see timing.h.
#include "gpusim/timing.h"

#include <algorithm>
#include <array>
#include <cstdlib>
#include <limits>
#include <map>
#include <mutex>
#include <stdexcept>
#include <utility>

#include "gpusim/devices.h"
#include "gpusim/operation_clock.h"
#include "gpusim/streams.h"
#include "gpusim/traffic.h"

namespace gpusim {
namespace {

constexpr int kMaxGpus = 64;  // XMLT_SIM_GPUS's limit
// Busy intervals kept per resource; past that the earliest are forgotten (only a workload far
// longer than a benchmark's gets there, and then only a late, very early operation could slip
// into a gap that was in fact taken).
constexpr size_t kMaxIntervals = size_t{1} << 16;

// When a resource is busy: disjoint [start, end) intervals, by start.
class Timeline {
 public:
  // The first free instant at or after `t`.
  double FreeFrom(double t) const {
    auto it = busy_.upper_bound(t);
    if (it != busy_.begin() && std::prev(it)->second > t) t = std::prev(it)->second;
    return t;
  }
  // Where the free stretch from `t` (a free instant) ends.
  double FreeUntil(double t) const {
    auto it = busy_.upper_bound(t);
    return it == busy_.end() ? std::numeric_limits<double>::infinity() : it->first;
  }

  void Take(double start, double end) {
    if (end <= start) return;
    auto next = busy_.lower_bound(start);
    if (next != busy_.begin() && std::prev(next)->second >= start) {  // joins the one before
      --next;
      start = next->first;
      end = std::max(end, next->second);
      next = busy_.erase(next);
    }
    while (next != busy_.end() && next->first <= end) {  // and the ones it reaches
      end = std::max(end, next->second);
      next = busy_.erase(next);
    }
    busy_.emplace(start, end);
    if (busy_.size() > kMaxIntervals) busy_.erase(busy_.begin());
  }

  void Clear() { busy_.clear(); }

 private:
  std::map<double, double> busy_;
};

struct GpuResources {
  Timeline peer_out, peer_in, host_out, host_in, memory;
  BusyTime busy;
};

struct Clock {
  std::mutex mutex;
  bool chosen = false;
  LinkModel model;
  std::array<GpuResources, kMaxGpus> gpus;
  double latest = 0;  // the end of the latest operation
  double host = 0;
  uint64_t unhinted = 0;
};

Clock& State() {
  static Clock* c = new Clock;
  return *c;
}

thread_local detail::OpClock* running = nullptr;
thread_local uint64_t next_kernel_bytes = UINT64_MAX;

// Figures of public specifications, per direction, for large transfers:
// - PCIe 4.0 x16: 16 GT/s per lane with 128b/130b coding is 31.5 GB/s raw; about 25 GB/s is what
//   pinned copies reach after packet overheads. Peer copies cross the same x16 link as host
//   copies. Memory: an A100 80GB PCIe card (HBM2e, 1,935 GB/s by its datasheet).
// - NVLink 4 on H100 SXM5: 18 links, 900 GB/s per GPU both directions together, so 450 GB/s each
//   way, every GPU reaching every other through NVSwitch; host link PCIe 5.0 x16 (63 GB/s raw,
//   about 50 effective); memory HBM3, 3,350 GB/s by the H100 datasheet.
// Latencies are round figures for a DMA's start to its first bytes, not measured.
LinkModel Pcie4() { return {"pcie4", 25, 5, 25, 5, 1935, true}; }
LinkModel Nvlink4() { return {"nvlink4", 450, 2, 50, 5, 3350, false}; }

LinkModel& ModelLocked(Clock& c) {
  if (!c.chosen) {
    const char* name = std::getenv("XMLT_SIM_LINK");
    c.model = LinkModelNamed(name != nullptr && *name != '\0' ? name : "pcie4");
    c.chosen = true;
  }
  return c.model;
}

void ClearLocked(Clock& c) {
  for (GpuResources& g : c.gpus) {
    for (Timeline* t : {&g.peer_out, &g.peer_in, &g.host_out, &g.host_in, &g.memory}) t->Clear();
    g.busy = {};
  }
  c.latest = c.host = 0;
  c.unhinted = 0;
}

// Every GPU's work run, then every clock at zero.
void Restart(const LinkModel* model) {
  for (int d = 0; d < DeviceCount(); ++d) detail::FlushDevice(d);
  detail::ResetStreamClocks();
  Clock& c = State();
  std::lock_guard<std::mutex> lock(c.mutex);
  if (model != nullptr) {
    c.model = *model;
    c.chosen = true;
  }
  ClearLocked(c);
}

bool Valid(int gpu) { return gpu >= 0 && gpu < kMaxGpus; }

// Takes `d` seconds during which both `a` and `b` (b may be null) are free, from `ready` on, in
// as many pieces as the gaps left by operations already timed require: a transfer uses whatever
// capacity earlier ones leave, as on a shared link. Returns the end of the last piece.
double TakeFree(Timeline& a, Timeline* b, double ready, double d) {
  double t = ready, left = d;
  while (left > 1e-15) {  // a femtosecond: what rounding leaves
    for (;;) {  // the first instant both are free
      const double ta = a.FreeFrom(t);
      const double tb = b == nullptr ? ta : b->FreeFrom(ta);
      if (tb == ta) {
        t = ta;
        break;
      }
      t = tb;
    }
    const double until = std::min(a.FreeUntil(t), b == nullptr ? std::numeric_limits<double>::infinity() : b->FreeUntil(t));
    const double take = std::min(left, until - t);
    a.Take(t, t + take);
    if (b != nullptr) b->Take(t, t + take);
    left -= take;
    t += take;
  }
  return t;
}

// One leg of a copy: out of `from`'s port and into `to`'s (either may be absent: host memory).
// Returns its end.
double Leg(GpuResources* from, Timeline* out, GpuResources* to, Timeline* in, double ready,
           uint64_t bytes, double gbps, double latency_us) {
  const double d = double(bytes) / (gbps * 1e9);
  double end = ready + d;
  if (out != nullptr) {
    end = TakeFree(*out, in, ready, d);
  } else if (in != nullptr) {
    end = TakeFree(*in, nullptr, ready, d);
  }
  if (from != nullptr) from->busy.send += d;
  if (to != nullptr) to->busy.receive += d;
  return end + latency_us * 1e-6;
}

}  // namespace

LinkModel LinkModelNamed(const std::string& name) {
  if (name == "pcie4") return Pcie4();
  if (name == "nvlink4") return Nvlink4();
  throw std::invalid_argument("gpusim: unknown link model '" + name + "' (pcie4 or nvlink4)");
}

LinkModel CurrentLinkModel() {
  Clock& c = State();
  std::lock_guard<std::mutex> lock(c.mutex);
  return ModelLocked(c);
}

void SetLinkModel(const LinkModel& model) { Restart(&model); }

double ProjectedTime() {
  Clock& c = State();
  std::lock_guard<std::mutex> lock(c.mutex);
  return c.latest;
}

void ResetProjection() { Restart(nullptr); }

BusyTime BusyTimeOf(int gpu) {
  Clock& c = State();
  std::lock_guard<std::mutex> lock(c.mutex);
  return Valid(gpu) ? c.gpus[size_t(gpu)].busy : BusyTime{};
}

uint64_t UnhintedKernels() {
  Clock& c = State();
  std::lock_guard<std::mutex> lock(c.mutex);
  return c.unhinted;
}

namespace timing {
void KernelBytes(uint64_t bytes) { next_kernel_bytes = bytes; }
}  // namespace timing

namespace detail {

OpClock* EnterOp(OpClock* clock) {
  OpClock* outer = running;
  running = clock;
  return outer;
}

void LeaveOp(OpClock* clock, OpClock* outer) {
  running = outer;
  Clock& c = State();
  std::lock_guard<std::mutex> lock(c.mutex);
  c.latest = std::max(c.latest, clock->end);
}

void After(double time) {
  if (running == nullptr) return;
  running->start = std::max(running->start, time);
  running->end = std::max(running->end, running->start);
}

double Now() { return running == nullptr ? 0.0 : running->end; }

void ChargeCopy(int src_gpu, int dst_gpu, uint64_t bytes) {
  if (running == nullptr || bytes == 0) return;
  if (src_gpu == dst_gpu) {
    if (src_gpu >= 0) ChargeMemory(src_gpu, 2 * bytes);  // read and written within one GPU
    return;
  }
  Clock& c = State();
  std::lock_guard<std::mutex> lock(c.mutex);
  const LinkModel& m = ModelLocked(c);
  GpuResources* from = Valid(src_gpu) ? &c.gpus[size_t(src_gpu)] : nullptr;
  GpuResources* to = Valid(dst_gpu) ? &c.gpus[size_t(dst_gpu)] : nullptr;
  const double ready = running->end;
  double end = ready;
  if (from != nullptr && to != nullptr && PeerAccessAllowed()) {
    Timeline* out = m.peer_over_host_link ? &from->host_out : &from->peer_out;
    Timeline* in = m.peer_over_host_link ? &to->host_in : &to->peer_in;
    end = Leg(from, out, to, in, ready, bytes, m.peer_gbps, m.peer_latency_us);
  } else {
    // Through host memory: down from the source, then up to the destination, each at the host
    // link's rate (a staged peer copy crosses the host link twice).
    if (from != nullptr) end = Leg(from, &from->host_out, nullptr, nullptr, end, bytes, m.host_gbps, m.host_latency_us);
    if (to != nullptr) end = Leg(nullptr, nullptr, to, &to->host_in, end, bytes, m.host_gbps, m.host_latency_us);
  }
  running->end = std::max(running->end, end);
}

void ChargeMemory(int gpu, uint64_t bytes) {
  if (running == nullptr || bytes == 0 || !Valid(gpu)) return;
  Clock& c = State();
  std::lock_guard<std::mutex> lock(c.mutex);
  const LinkModel& m = ModelLocked(c);
  GpuResources& g = c.gpus[size_t(gpu)];
  const double d = double(bytes) / (m.hbm_gbps * 1e9);
  const double end = TakeFree(g.memory, nullptr, running->end, d);
  g.busy.memory += d;
  running->end = std::max(running->end, end);
}

uint64_t TakeKernelBytes() { return std::exchange(next_kernel_bytes, UINT64_MAX); }

void CountUnhintedKernel() {
  Clock& c = State();
  std::lock_guard<std::mutex> lock(c.mutex);
  ++c.unhinted;
}

double HostNow() {
  Clock& c = State();
  std::lock_guard<std::mutex> lock(c.mutex);
  return c.host;
}

void HostAdvance(double time) {
  Clock& c = State();
  std::lock_guard<std::mutex> lock(c.mutex);
  c.host = std::max(c.host, time);
}

}  // namespace detail
}  // namespace gpusim
