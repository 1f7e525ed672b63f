// The merge projection's reference schedules; see merge_projection_reference_schedules.h.
#include "benchmarks/merge_projection_reference_schedules.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <vector>

#include "base/near_equal_pieces.h"
#include "gpusim/timing.h"
#include "merge/gpu/replica_kernels.h"

namespace merge_projection {

using xmlt::base::Piece;
using xmlt::base::Range;

double NcclStyleRing(Replicas& r, size_t channels, size_t slice_floats) {
  const size_t n = size_t(r.gpus());
  const size_t chunk_floats = (r.count + channels * n - 1) / (channels * n);
  const size_t slices = std::max<size_t>(1, (chunk_floats + slice_floats - 1) / slice_floats);
  const size_t steps = 2 * n - 2;
  std::vector<std::vector<Stream>> streams(n);     // [gpu][channel]
  std::vector<std::vector<DeviceBuffer<float>>> staged(n);
  std::vector<std::vector<Event>> done(n);         // [gpu][(channel * slices + j) * (steps + 1) + s]
  for (size_t g = 0; g < n; ++g) {
    DeviceGuard guard{int(g)};
    for (size_t p = 0; p < channels; ++p) {
      streams[g].emplace_back();
      staged[g].emplace_back((chunk_floats + slices - 1) / slices + 1);
    }
    done[g] = EventsOn(int(g), channels * slices * (steps + 1));
  }
  auto event = [&](size_t g, size_t p, size_t j, size_t s) -> Event& {
    return done[g][(p * slices + j) * (steps + 1) + s];
  };
  gpusim::ResetProjection();
  std::vector<Event*> order;
  for (size_t wave = 1; wave < slices + steps; ++wave)
    for (size_t s = 1; s <= steps; ++s) {
      if (wave < s || wave - s >= slices) continue;
      const size_t j = wave - s;
      for (size_t p = 0; p < channels; ++p) {
        const Range part = Piece(0, r.count, p, channels);
        for (size_t k = 0; k < n; ++k) {
          const size_t to = (k + p) % n, from = (k + n - 1 + p) % n;
          const bool reduce = s <= n - 1;
          const size_t within = reduce ? s - 1 : s - n;
          const size_t c = reduce ? (k + 2 * n - 1 - within) % n : (k + n - within) % n;
          const Range chunk = Piece(part.begin, part.end, c, n);
          const Range slice = Piece(chunk.begin, chunk.end, j, slices);
          DeviceGuard guard{int(to)};
          const cudaStream_t stream = streams[to][p].get();
          if (s > 1) XMLT_CUDA_CHECK(cudaStreamWaitEvent(stream, event(from, p, j, s - 1).get(), 0));
          if (slice.size() > 0) {
            float* destination = reduce ? staged[to][p].data() : r.params[to].data() + slice.begin;
            XMLT_CUDA_CHECK(cudaMemcpyPeerAsync(destination, int(to), r.params[from].data() + slice.begin, int(from),
                                                slice.size() * sizeof(float), stream));
            if (reduce) LaunchAdd(stream, r.params[to].data() + slice.begin, staged[to][p].data(), slice.size());
          }
          event(to, p, j, s).Record(stream);
          order.push_back(&event(to, p, j, s));
        }
      }
    }
  RunInOrder(order);
  SynchronizeAll(r.gpus());
  return gpusim::ProjectedTime();
}

double Tree(Replicas& r, size_t chunks) {
  const size_t n = size_t(r.gpus());
  auto children = [&](size_t i) {
    std::vector<size_t> out;
    for (size_t c : {2 * i + 1, 2 * i + 2})
      if (c < n) out.push_back(c);
    return out;
  };
  const size_t largest = (r.count + chunks - 1) / chunks;
  struct Node {
    Stream copies, adds;
    std::vector<Stream> sends;  // per child
    std::vector<DeviceBuffer<float>> slots;  // [child * 2 + c % 2]
    std::vector<Event> copied, reduced;  // per chunk
    std::vector<Event> final_sum;         // per chunk, on the parent's GPU, which records them
  };
  std::vector<Node> nodes(n);
  for (size_t i = 0; i < n; ++i) {
    DeviceGuard guard{int(i)};
    Node& node = nodes[i];
    node.copies = Stream();
    node.adds = Stream();
    for (size_t k = 0; k < children(i).size(); ++k) node.sends.emplace_back();
    for (size_t k = 0; k < 2 * children(i).size(); ++k) node.slots.emplace_back(largest);
    node.copied = EventsOn(int(i), chunks);
    node.reduced = EventsOn(int(i), chunks);
    if (i > 0) node.final_sum = EventsOn(int((i - 1) / 2), chunks);
  }
  gpusim::ResetProjection();
  for (size_t c = 0; c < chunks; ++c) {
    const Range range = Piece(0, r.count, c, chunks);
    for (size_t i = n; i-- > 0;) {  // children before parents: their events are recorded first
      const std::vector<size_t> kids = children(i);
      if (kids.empty()) continue;
      DeviceGuard guard{int(i)};
      Node& node = nodes[i];
      if (c >= 2) XMLT_CUDA_CHECK(cudaStreamWaitEvent(node.copies.get(), node.reduced[c - 2].get(), 0));
      // Flow control, as a pipelined tree's bounded buffers impose: a node runs at most two chunks
      // ahead of its parent, which leaves its port time for the sum coming down.
      if (i > 0 && c >= 2)
        XMLT_CUDA_CHECK(cudaStreamWaitEvent(node.copies.get(), nodes[(i - 1) / 2].copied[c - 2].get(), 0));
      for (size_t e = 0; e < kids.size(); ++e) {
        if (!children(kids[e]).empty())
          XMLT_CUDA_CHECK(cudaStreamWaitEvent(node.copies.get(), nodes[kids[e]].reduced[c].get(), 0));
        XMLT_CUDA_CHECK(cudaMemcpyPeerAsync(node.slots[2 * e + c % 2].data(), int(i),
                                            r.params[kids[e]].data() + range.begin, int(kids[e]),
                                            range.size() * sizeof(float), node.copies.get()));
      }
      node.copied[c].Record(node.copies.get());
      XMLT_CUDA_CHECK(cudaStreamWaitEvent(node.adds.get(), node.copied[c].get(), 0));
      for (size_t e = 0; e < kids.size(); ++e)
        LaunchAdd(node.adds.get(), r.params[i].data() + range.begin, node.slots[2 * e + c % 2].data(), range.size());
      node.reduced[c].Record(node.adds.get());
    }
  }
  // The sum comes down: each parent sends chunk c to its children once it holds the final chunk.
  for (size_t c = 0; c < chunks; ++c) {
    const Range range = Piece(0, r.count, c, chunks);
    for (size_t i = 0; i < n; ++i) {
      const std::vector<size_t> kids = children(i);
      if (kids.empty()) continue;
      DeviceGuard guard{int(i)};
      Node& node = nodes[i];
      Event& ready = i == 0 ? node.reduced[c] : node.final_sum[c];
      for (size_t e = 0; e < kids.size(); ++e) {
        const cudaStream_t stream = node.sends[e].get();
        XMLT_CUDA_CHECK(cudaStreamWaitEvent(stream, ready.get(), 0));
        XMLT_CUDA_CHECK(cudaMemcpyPeerAsync(r.params[kids[e]].data() + range.begin, int(kids[e]),
                                            r.params[i].data() + range.begin, int(i), range.size() * sizeof(float),
                                            stream));
        // The child holds the final chunk c once this copy is done (a leaf's event is not waited for).
        nodes[kids[e]].final_sum[c].Record(stream);
      }
    }
  }
  std::vector<Event*> order;  // chunk by chunk: its sums up the tree, then down
  for (size_t c = 0; c < chunks; ++c) {
    for (size_t i = n; i-- > 0;)
      if (!children(i).empty()) order.push_back(&nodes[i].reduced[c]);
    for (size_t i = 1; i < n; ++i) order.push_back(&nodes[i].final_sum[c]);
  }
  RunInOrder(order);
  SynchronizeAll(r.gpus());
  return gpusim::ProjectedTime();
}

}  // namespace merge_projection
