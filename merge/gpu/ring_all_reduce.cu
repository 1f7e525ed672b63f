// The ring all-reduce over GPU replicas; see ring_all_reduce.h.
#include "merge/gpu/ring_all_reduce.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <stdexcept>
#include <string>

#include "base/near_equal_pieces.h"
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/device_buffer.h"
#include "merge/gpu/device_global_model.h"
#include "merge/gpu/peer_access.h"
#include "merge/gpu/replica_kernels.h"

namespace xmlt::merge::gpu {

using base::Piece;
using base::Range;

using kernels::cuda::DeviceBuffer;
using kernels::cuda::DeviceGuard;
using kernels::cuda::Event;
using kernels::cuda::PinnedBuffer;
using kernels::cuda::Stream;

struct RingAllReduce::Impl {
  struct Gpu {
    int ordinal = 0;
    std::vector<size_t> replicas;  // indices into `replicas`, in order
    DeviceBuffer<float> acc;
    std::vector<DeviceBuffer<float>> received;  // per partition
    std::vector<Stream> streams;                // per partition
    std::vector<Event> events;                  // per partition, two each: alternate steps
    DeviceBuffer<double> partial;               // the norms' per-block sums, then the totals
    PinnedBuffer<double> norms;                 // the totals on the host
  };

  std::vector<base::ReplicaParams> replicas;
  size_t count = 0;
  size_t partitions = 0;
  bool peer_access = true;
  std::vector<Gpu> gpus;  // in order of first appearance
  DeviceGlobalModel global;  // w and w_p, each GPU's copy valid on the chunks it owns

  // Whether w and w_p are on the GPUs (always, for an empty model).
  Event& EventOf(size_t g, size_t p, size_t step) { return gpus[g].events[2 * p + step % 2]; }

  // The GPU at ring position k of partition p: each partition's ring starts at another GPU.
  size_t At(size_t p, size_t k) const { return (k + p) % gpus.size(); }

  Range PartitionRange(size_t p) const { return Piece(0, count, p, partitions); }
  Range Chunk(size_t p, size_t c) const {
    const Range part = PartitionRange(p);
    return Piece(part.begin, part.end, c, gpus.size());
  }

  // What a ring position does with the chunk it receives: adds it into its own (the
  // reduce-scatter) or copies it over its own (the all-gather).
  enum class Receive { kAdd, kOverwrite };

  // Ring step `step` of partition p at ring position k: chunk `c` comes from position k - 1 once
  // that position's step - 1 is done. Steps count on across both phases (1 .. 2N-2, 0 being the
  // local sum), so that consecutive steps alternate between each GPU's two events.
  void ReceiveChunk(size_t p, size_t k, size_t step, size_t c, Receive how) {
    const size_t n = gpus.size();
    const size_t receiver = At(p, k), sender = At(p, (k + n - 1) % n);
    Gpu& to = gpus[receiver];
    const Gpu& from = gpus[sender];
    const cudaStream_t stream = to.streams[p].get();
    DeviceGuard guard(to.ordinal);
    XMLT_CUDA_CHECK(cudaStreamWaitEvent(stream, EventOf(sender, p, step - 1).get(), 0));
    const Range r = Chunk(p, c);
    if (r.size() > 0) {
      const bool add = how == Receive::kAdd;
      float* destination = add ? to.received[p].data() : to.acc.data() + r.begin;
      XMLT_CUDA_CHECK(cudaMemcpyPeerAsync(destination, to.ordinal, from.acc.data() + r.begin, from.ordinal,
                                          r.size() * sizeof(float), stream));
      if (add) LaunchAdd(stream, to.acc.data() + r.begin, to.received[p].data(), r.size());
    }
    EventOf(receiver, p, step).Record(stream);
  }

  // The reduce-scatter, N-1 steps (ring steps 1 .. N-1). At step s, position k sends chunk
  // k - s (mod N) to k + 1 and receives chunk k - 1 - s from k - 1, adding it into its own: the
  // chunk it sends next. After the last step position k holds chunk k + 1 summed over every GPU
  // (Owned), and with momentum applies the rule to it there.
  void ReduceScatter(const DeviceMomentum* momentum) {
    const size_t n = gpus.size();
    for (size_t s = 0; s + 1 < n; ++s)
      for (size_t p = 0; p < partitions; ++p)
        for (size_t k = 0; k < n; ++k) {
          ReceiveChunk(p, k, 1 + s, (k + 2 * n - 1 - s) % n, Receive::kAdd);
          if (momentum != nullptr && s + 2 == n) Finish(p, k, *momentum);
        }
    if (momentum != nullptr && n == 1)  // no ring: the one GPU owns everything after its local sum
      for (size_t p = 0; p < partitions; ++p) Finish(p, 0, *momentum);
  }

  // The all-gather, N-1 steps (ring steps N .. 2N-2). At step s, position k sends chunk k + 1 - s
  // (mod N) to k + 1 (the one it owns at s = 0, then the one it received the step before) and
  // receives chunk k - s from k - 1, over its own.
  void AllGather() {
    const size_t n = gpus.size();
    for (size_t s = 0; s + 1 < n; ++s)
      for (size_t p = 0; p < partitions; ++p)
        for (size_t k = 0; k < n; ++k) ReceiveChunk(p, k, n + s, (k + n - s) % n, Receive::kOverwrite);
  }

  // The chunk of partition p that ring position k holds whole after the reduce-scatter.
  Range Owned(size_t p, size_t k) const { return Chunk(p, (k + 1) % gpus.size()); }

  // The owner of each chunk applies the global momentum rule to it, after its last reduce-scatter
  // step (the all-gather's first copy from it waits for this, through the same event).
  void Finish(size_t p, size_t k, const DeviceMomentum& momentum) {
    const size_t g = At(p, k);
    Gpu& gpu = gpus[g];
    const Range r = Owned(p, k);
    const size_t last = gpus.size() - 1;  // the last reduce-scatter step (0: the local sum)
    if (r.size() > 0) {
      DeviceGuard guard(gpu.ordinal);
      const cudaStream_t stream = gpu.streams[p].get();
      LaunchMomentum(stream, gpu.acc.data() + r.begin, global.current(g) + r.begin, global.previous(g) + r.begin,
                     r.size(), momentum);
      EventOf(g, p, last).Record(stream);
    }
  }

  void Run(const std::vector<double>& weights, const DeviceMomentum* momentum, bool to_replicas);

  // Each GPU's weighted sum of its own replicas over partition p, into its accumulator.
  void LocalSum(size_t g, size_t p, const std::vector<double>& weights) {
    Gpu& gpu = gpus[g];
    const Range part = PartitionRange(p);
    const cudaStream_t stream = gpu.streams[p].get();
    DeviceGuard guard(gpu.ordinal);
    LaunchWeightedSumOfReplicas(stream, gpu.acc.data(), part.begin, part.size(), replicas, gpu.replicas, weights);
    EventOf(g, p, 0).Record(stream);
  }

  // The result back into each of the GPU's replicas (copies within the GPU).
  void Scatter(size_t g, size_t p) {
    Gpu& gpu = gpus[g];
    const Range part = PartitionRange(p);
    if (part.size() == 0) return;
    DeviceGuard guard(gpu.ordinal);
    for (const size_t i : gpu.replicas)
      XMLT_CUDA_CHECK(cudaMemcpyAsync(replicas[i].params + part.begin, gpu.acc.data() + part.begin,
                                      part.size() * sizeof(float), cudaMemcpyDeviceToDevice, gpu.streams[p].get()));
  }
};

RingAllReduce::RingAllReduce(std::vector<base::ReplicaParams> replicas, size_t count, size_t partitions)
    : impl_(std::make_unique<Impl>()) {
  Impl& m = *impl_;
  for (GpuReplicaGroup& group : GroupByGpu(replicas, count, "RingAllReduce")) {
    m.gpus.emplace_back();
    m.gpus.back().ordinal = group.ordinal;
    m.gpus.back().replicas = std::move(group.replicas);
  }
  m.replicas = std::move(replicas);
  m.count = count;
  const size_t n = m.gpus.size();
  m.partitions = partitions == 0 ? n : partitions;
  size_t largest_chunk = 0;
  for (size_t p = 0; p < m.partitions; ++p)
    for (size_t c = 0; c < n; ++c) largest_chunk = std::max(largest_chunk, m.Chunk(p, c).size());
  for (Impl::Gpu& gpu : m.gpus) {
    DeviceGuard guard(gpu.ordinal);
    gpu.acc = DeviceBuffer<float>(count);
    for (size_t p = 0; p < m.partitions; ++p) {
      gpu.received.emplace_back(n > 1 ? largest_chunk : 0);
      gpu.streams.emplace_back();
      gpu.events.emplace_back();
      gpu.events.emplace_back();
    }
    gpu.partial = DeviceBuffer<double>(kSquaresScratch + gpu.replicas.size());
    gpu.norms = PinnedBuffer<double>(gpu.replicas.size());
  }
  // Each GPU keeps w and w_p whole-sized, valid on the chunks it owns after the reduce-scatter;
  // the finite check counts those.
  std::vector<DeviceGlobalModel::Layout> layouts;
  for (size_t g = 0; g < n; ++g) {
    DeviceGlobalModel::Layout& layout = layouts.emplace_back();
    layout.ordinal = m.gpus[g].ordinal;
    layout.size = count;
    for (size_t p = 0; p < m.partitions; ++p)
      for (size_t k = 0; k < n; ++k) {
        if (m.At(p, k) != g) continue;
        const Range r = m.Owned(p, k);
        layout.parts.push_back({r.begin, r.begin, r.size(), true});
        layout.checked.push_back({r.begin, r.size()});
      }
  }
  m.global = DeviceGlobalModel("RingAllReduce", std::move(layouts));
  if (count == 0) m.global.Upload(nullptr, nullptr);  // an empty model has nothing to set: it is set
  // Each GPU copies from its left neighbour in every partition's ring (rotations keep neighbours).
  for (size_t k = 0; k < n && n > 1; ++k) {
    if (!EnablePeerAccess(m.gpus[k].ordinal, m.gpus[(k + n - 1) % n].ordinal)) m.peer_access = false;
  }
}

RingAllReduce::~RingAllReduce() = default;

void RingAllReduce::Impl::Run(const std::vector<double>& weights, const DeviceMomentum* momentum, bool to_replicas) {
  if (weights.size() != replicas.size())
    throw std::invalid_argument("RingAllReduce: " + std::to_string(weights.size()) + " weights for " +
                                std::to_string(replicas.size()) + " replicas");
  const size_t n = gpus.size();
  // Issued step by step across the partitions, so that each partition's copies overlap the others'
  // additions; within a step every GPU waits only for its left neighbour's previous step.
  for (size_t p = 0; p < partitions; ++p)
    for (size_t g = 0; g < n; ++g) LocalSum(g, p, weights);
  ReduceScatter(momentum);
  AllGather();
  if (to_replicas)
    for (size_t p = 0; p < partitions; ++p)
      for (size_t g = 0; g < n; ++g) Scatter(g, p);
  for (Gpu& gpu : gpus)
    for (Stream& stream : gpu.streams) stream.Synchronize();
}

void RingAllReduce::WeightedAllReduce(const std::vector<double>& weights) { impl_->Run(weights, nullptr, true); }

void RingAllReduce::WeightedAllReduce(const std::vector<double>& weights, const DeviceMomentum& momentum) {
  impl_->global.CheckSetBefore("the global momentum");
  impl_->Run(weights, &momentum, true);
}

void RingAllReduce::WeightedSumToEveryGpu(const std::vector<double>& weights) { impl_->Run(weights, nullptr, false); }

const float* RingAllReduce::Sum(int gpu) const {
  for (const Impl::Gpu& g : impl_->gpus)
    if (g.ordinal == gpu) return g.acc.data();
  throw std::invalid_argument("RingAllReduce: GPU " + std::to_string(gpu) + " is not in the ring");
}

bool RingAllReduce::GlobalModelFinite() {
  Impl& m = *impl_;
  std::vector<cudaStream_t> streams;
  for (Impl::Gpu& gpu : m.gpus) streams.push_back(gpu.streams[0].get());
  return m.global.CountNonFinite(streams) == 0;
}

void RingAllReduce::SetGlobalModel(const float* current, const float* previous) {
  impl_->global.Upload(current, previous);
}

void RingAllReduce::GetGlobalModel(float* current, float* previous) {
  impl_->global.Download(current, previous);
}

std::vector<double> RingAllReduce::SquaredNorms() {
  Impl& m = *impl_;
  std::vector<double> norms(m.replicas.size(), 0.0);
  for (Impl::Gpu& gpu : m.gpus) {
    if (m.count == 0) continue;
    DeviceGuard guard(gpu.ordinal);
    const cudaStream_t stream = gpu.streams[0].get();
    for (size_t t = 0; t < gpu.replicas.size(); ++t)
      LaunchSquaredNorm(stream, m.replicas[gpu.replicas[t]].params, m.count, gpu.partial.data(),
                        gpu.partial.data() + kSquaresScratch + t);
    XMLT_CUDA_CHECK(cudaMemcpyAsync(gpu.norms.data(), gpu.partial.data() + kSquaresScratch,
                                    gpu.replicas.size() * sizeof(double), cudaMemcpyDeviceToHost, stream));
  }
  for (Impl::Gpu& gpu : m.gpus) {
    if (m.count == 0) continue;
    gpu.streams[0].Synchronize();
    for (size_t t = 0; t < gpu.replicas.size(); ++t) norms[gpu.replicas[t]] = gpu.norms.data()[t];
  }
  return norms;
}

size_t RingAllReduce::gpus() const { return impl_->gpus.size(); }
size_t RingAllReduce::partitions() const { return impl_->partitions; }
bool RingAllReduce::peer_access() const { return impl_->peer_access; }

}  // namespace xmlt::merge::gpu
