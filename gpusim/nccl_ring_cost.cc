// The cost of NCCL's ring on the simulated GPUs. Traffic is counted as NCCL's ring moves it: each
// rank sends to the next (N-1)/N of the buffer in a reduce-scatter or an all-gather and 2(N-1)/N in
// an all-reduce. The virtual clock (timing.h) is charged the same way, from when the last rank's
// inputs are ready: N-1 steps per phase, in each every rank sends one chunk over its outgoing port
// into the next rank's incoming one, and in a reduction the receiver reads that chunk and its own
// and writes the sum (3 chunks of its memory), alongside the copy, as NCCL's kernels reduce while
// they move; every rank's operation ends with the last step.
#include "gpusim/nccl_ring_cost.h"

#include <algorithm>
#include <cstdint>

#include "base/near_equal_pieces.h"
#include "gpusim/nccl_communicators.h"
#include "gpusim/operation_clock.h"
#include "gpusim/timing.h"
#include "gpusim/traffic.h"

using namespace gpusim;
using namespace gpusim::detail;

namespace gpusim::nccl {
namespace {

// Charges `charge` to the virtual clock as work of its own from `ready`, beside the running
// operation's (the ranks of a ring move their chunks at the same time); returns its end.
template <class F>
double ChargeFrom(double ready, F&& charge) {
  OpClock piece;
  piece.start = piece.end = ready;
  OpClock* outer = EnterOp(&piece);
  charge();
  LeaveOp(&piece, outer);
  return piece.end;
}

}  // namespace

// The ring's steps on the virtual clock, from `ready` (see the top of this file); returns the end
// of the last. Chunks as CountRingTraffic cuts them: at step s of the reduce-scatter rank r sends
// chunk r - s, at step s of the all-gather chunk r + 1 - s (mod N).
double ChargeRing(const std::vector<Call>& calls, double ready) {
  const size_t n = calls.size();
  const Call& first = calls[0];
  const size_t size = SizeOf(first.datatype);
  auto device = [&](size_t r) { return calls[r % n].comm->device; };
  if (n == 1) {  // no peer: at most a copy within the GPU
    if (calls[0].send == calls[0].recv) return ready;
    return ChargeFrom(ready, [&] { ChargeMemory(device(0), 2 * first.count * size); });
  }
  auto chunk_bytes = [&](size_t c) {
    if (first.kind != Kind::kAllReduce) return first.count * size;
    return xmlt::base::Piece(0, first.count, c, n).size() * size;
  };
  double t = ready, local = ready;
  if (first.kind == Kind::kAllGather) {
    // Out of place, each rank also copies its own chunk into its slot of the output, beside the
    // ring's steps.
    for (size_t r = 0; r < n; ++r) {
      const auto* slot = static_cast<const unsigned char*>(calls[r].recv) + r * first.count * size;
      if (calls[r].send != slot)
        local = std::max(local, ChargeFrom(ready, [&] { ChargeMemory(device(r), 2 * first.count * size); }));
    }
  }
  for (const bool reduce : {true, false}) {
    if (reduce ? first.kind == Kind::kAllGather : first.kind == Kind::kReduceScatter) continue;
    for (size_t s = 0; s + 1 < n; ++s) {
      double step_end = t;
      for (size_t r = 0; r < n; ++r) {
        const uint64_t bytes = chunk_bytes((reduce ? r + n - s : r + 1 + n - s) % n);
        step_end = std::max(step_end, ChargeFrom(t, [&] { ChargeCopy(device(r), device(r + 1), bytes); }));
        if (reduce) step_end = std::max(step_end, ChargeFrom(t, [&] { ChargeMemory(device(r + 1), 3 * bytes); }));
      }
      t = step_end;
    }
  }
  return std::max(t, local);
}

// NCCL's ring: over N ranks each rank sends N-1 of the N chunks to the next one in a
// reduce-scatter (all but the chunk it ends up owning) and in an all-gather (all but the one it
// receives last); an all-reduce is both, over chunks of near-equal size.
void CountRingTraffic(const std::vector<Call>& calls) {
  const size_t n = calls.size();
  if (n < 2) return;
  const Call& first = calls[0];
  const size_t size = SizeOf(first.datatype);
  for (size_t r = 0; r < n; ++r) {
    const int from = calls[r].comm->device, to = calls[(r + 1) % n].comm->device;
    if (first.kind == Kind::kAllReduce) {
      const size_t count = first.count;
      auto chunk = [&](size_t c) { return xmlt::base::Piece(0, count, c, n).size(); };
      CountCopy(from, to, (2 * count - chunk((r + 1) % n) - chunk((r + 2) % n)) * size);
    } else {
      CountCopy(from, to, (n - 1) * first.count * size);
    }
  }
}

}  // namespace gpusim::nccl
