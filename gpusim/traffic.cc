// Copy counters of the simulated GPUs; see traffic.h.
#include "gpusim/traffic.h"

#include <array>
#include <atomic>
#include <cstdlib>
#include <cstring>

namespace gpusim {
namespace {

constexpr int kMaxGpus = 64;  // XMLT_SIM_GPUS's limit

struct Counters {
  std::atomic<uint64_t> peer_sent{0}, peer_received{0}, to_host{0}, from_host{0};
};

std::array<Counters, kMaxGpus>& All() {
  static std::array<Counters, kMaxGpus> counters;
  return counters;
}

bool Valid(int gpu) { return gpu >= 0 && gpu < kMaxGpus; }

}  // namespace

Traffic TrafficOf(int gpu) {
  Traffic t;
  if (!Valid(gpu)) return t;
  const Counters& c = All()[size_t(gpu)];
  t.peer_sent = c.peer_sent;
  t.peer_received = c.peer_received;
  t.to_host = c.to_host;
  t.from_host = c.from_host;
  return t;
}

void ResetTraffic() {
  for (Counters& c : All()) c.peer_sent = c.peer_received = c.to_host = c.from_host = 0;
}

bool PeerAccessAllowed() {
  static const bool allowed = [] {
    const char* v = std::getenv("XMLT_SIM_PEER_ACCESS");
    return v == nullptr || std::strcmp(v, "0") != 0;
  }();
  return allowed;
}

namespace detail {

void CountCopy(int src_gpu, int dst_gpu, uint64_t bytes) {
  if (src_gpu == dst_gpu) return;  // within one GPU (or host to host): no link is used
  if (src_gpu >= 0 && dst_gpu >= 0) {
    if (Valid(src_gpu)) All()[size_t(src_gpu)].peer_sent += bytes;
    if (Valid(dst_gpu)) All()[size_t(dst_gpu)].peer_received += bytes;
    if (PeerAccessAllowed()) return;
    // Staged through host memory: down from the source, up to the destination.
    if (Valid(src_gpu)) All()[size_t(src_gpu)].to_host += bytes;
    if (Valid(dst_gpu)) All()[size_t(dst_gpu)].from_host += bytes;
    return;
  }
  if (src_gpu >= 0 && Valid(src_gpu)) All()[size_t(src_gpu)].to_host += bytes;
  if (dst_gpu >= 0 && Valid(dst_gpu)) All()[size_t(dst_gpu)].from_host += bytes;
}

}  // namespace detail
}  // namespace gpusim
