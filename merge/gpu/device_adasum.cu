// The Adasum merge on GPU replicas; see device_adasum.h.
#include "merge/gpu/device_adasum.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <array>
#include <stdexcept>
#include <string>
#include <utility>

#include "base/near_equal_pieces.h"
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/device_buffer.h"
#include "merge/adasum.h"
#include "merge/gpu/adasum_kernels.h"
#include "merge/gpu/device_global_model.h"
#include "merge/gpu/peer_access.h"

namespace xmlt::merge::gpu {

using base::Piece;
using base::Range;

using kernels::cuda::DeviceBuffer;
using kernels::cuda::DeviceGuard;
using kernels::cuda::Event;
using kernels::cuda::Stream;

constexpr size_t kChunks = DeviceAdasum::kPipelineChunks;

struct DeviceAdasum::Impl {
  struct Gpu {
    int ordinal = 0;
    std::vector<size_t> replicas;  // indices into `replicas`, ascending; the first receives the result
    Stream stream;
    Event event;                     // re-recorded after each phase; waits take the latest record
    Stream copies;                   // the pulls, beside the arithmetic on `stream`
    std::vector<Event> pulled;       // per chunk of each slice of the result: in the first replica
    Event gathered;                  // every slice pulled
    DeviceBuffer<float> staged;      // the next start of the first replica's own slice
    DeviceBuffer<double> partial;    // the dots' per-block sums
  };
  struct Rank {                      // per replica
    DeviceBuffer<float> received[2];  // the partner's values when it lives on another GPU, by level parity
    Event consumed[2];               // the last combination that read each receive buffer
    Event sendable;                  // the part that the next partner pulls is ready
    std::vector<Event> arrived = std::vector<Event>(kChunks);  // each chunk of the partner's range
    DeviceBuffer<double> dots;       // per level it works in, chunk and tensor: 3 doubles
    DeviceBuffer<double> rows;       // its group's dots, gathered
    DeviceBuffer<float> coefficients;  // two per tensor
  };

  std::vector<base::ReplicaParams> replicas;
  size_t count = 0;
  std::vector<size_t> bounds;  // tensor t spans [bounds[t], bounds[t + 1])
  DeviceMomentum momentum;
  std::vector<std::vector<AdasumStep>> levels;  // the reduce-scatter (merge::AdasumReduceScatter)
  std::vector<AdasumSlice> slices;              // its result, in operand order
  std::vector<size_t> gpu_of;  // replica -> index into `gpus`
  std::vector<Gpu> gpus;       // in order of first appearance
  std::vector<Rank> ranks;
  std::vector<std::pair<size_t, size_t>> first_sent;  // per replica: what the first level pulls from it
  std::vector<bool> works_first;  // per replica: whether it combines at the first level
  bool peer_access = true;
  DeviceGlobalModel global;  // w and w_p, whole on every GPU

  size_t tensors() const { return bounds.size() - 1; }
  float* First(Gpu& gpu) { return replicas[gpu.replicas.front()].params; }
  bool Remote(size_t a, size_t b) const { return gpu_of[a] != gpu_of[b]; }

  void Deltas(size_t g, bool sent);
  void RecordAll();
  void Exchange(const AdasumStep& step, size_t level);
  void CombineStep(const AdasumStep& step, size_t level);
  void CombineRange(const AdasumStep& step, size_t level, size_t lo, size_t hi);
  size_t SliceInTurn(size_t gpu, size_t turn) const;
  void Gather(size_t gpu);
  void Update(size_t gpu);
};

// The deltas of this GPU's replicas: first (`sent`) the range that each one's partner on another
// GPU pulls at the first level, so that the pull can start while the rest is computed.
void DeviceAdasum::Impl::Deltas(size_t g, bool sent) {
  Gpu& gpu = gpus[g];
  DeviceGuard guard(gpu.ordinal);
  const cudaStream_t stream = gpu.stream.get();
  auto delta = [&](size_t i, size_t lo, size_t hi) {
    if (hi > lo)
      LaunchAdasumDeltas(stream, replicas[i].params + lo, global.current(g) + lo, global.previous(g) + lo, hi - lo,
                         momentum);
  };
  for (const size_t i : gpu.replicas) {
    const auto [lo, hi] = first_sent[i];
    if (sent) {
      delta(i, lo, hi);
      ranks[i].sendable.Record(stream);
    } else {
      delta(i, 0, lo);
      delta(i, hi, count);
      // A replica that does not combine at the first level is first pulled from at a later one,
      // whole range ready.
      if (!works_first[i]) ranks[i].sendable.Record(stream);
    }
  }
}

void DeviceAdasum::Impl::RecordAll() {
  for (Gpu& gpu : gpus) {
    DeviceGuard guard(gpu.ordinal);
    gpu.event.Record(gpu.stream.get());
  }
}

// The partner's range pulled over if it lives elsewhere, chunk by chunk on the copy stream once the
// partner has it ready and this replica's receive buffer for the level's parity is free; per chunk
// (as it arrives) and tensor the partial dots of the range into the replica's rows for this level.
void DeviceAdasum::Impl::Exchange(const AdasumStep& step, size_t level) {
  Gpu& gpu = gpus[gpu_of[step.replica]];
  DeviceGuard guard(gpu.ordinal);
  const cudaStream_t stream = gpu.stream.get();
  Rank& rank = ranks[step.replica];
  const size_t n = step.end - step.begin;
  const bool remote = Remote(step.replica, step.partner);
  const bool pulled = remote && n > 0;
  const float* other = remote ? rank.received[level % 2].data() : replicas[step.partner].params + step.begin;
  if (pulled) {
    Gpu& from = gpus[gpu_of[step.partner]];
    const cudaStream_t copies = gpu.copies.get();
    float* buffer = rank.received[level % 2].data();
    const float* from_values = replicas[step.partner].params + step.begin;
    XMLT_CUDA_CHECK(cudaStreamWaitEvent(copies, ranks[step.partner].sendable.get(), 0));
    XMLT_CUDA_CHECK(cudaStreamWaitEvent(copies, rank.consumed[level % 2].get(), 0));
    for (size_t c = 0; c < kChunks; ++c) {
      const auto [lo, hi] = Piece(0, n, c, kChunks);
      if (hi > lo)
        XMLT_CUDA_CHECK(cudaMemcpyPeerAsync(buffer + lo, gpu.ordinal, from_values + lo, from.ordinal,
                                            (hi - lo) * sizeof(float), copies));
      rank.arrived[c].Record(copies);
    }
  }
  const float* own = replicas[step.replica].params + step.begin;
  const float* a = step.left ? own : other;
  const float* b = step.left ? other : own;
  for (size_t c = 0; c < kChunks; ++c) {
    if (pulled) XMLT_CUDA_CHECK(cudaStreamWaitEvent(stream, rank.arrived[c].get(), 0));
    const auto [chunk_lo, chunk_hi] = Piece(0, n, c, kChunks);
    for (size_t t = 0; t < tensors(); ++t) {  // an empty overlap still writes its zero dots
      const size_t lo = std::clamp(bounds[t], step.begin + chunk_lo, step.begin + chunk_hi) - step.begin;
      const size_t hi = std::clamp(bounds[t + 1], step.begin + chunk_lo, step.begin + chunk_hi) - step.begin;
      LaunchAdasumDots(stream, a + lo, b + lo, hi - lo, gpu.partial.data(),
                       rank.dots.data() + 3 * ((level * kChunks + c) * tensors() + t));
    }
  }
}

// a and b combined on [lo, hi) (offsets into the step's range) into the replica's own buffer.
void DeviceAdasum::Impl::CombineRange(const AdasumStep& step, size_t level, size_t lo, size_t hi) {
  Gpu& gpu = gpus[gpu_of[step.replica]];
  const cudaStream_t stream = gpu.stream.get();
  Rank& rank = ranks[step.replica];
  float* own = replicas[step.replica].params + step.begin;
  const float* other = Remote(step.replica, step.partner) ? rank.received[level % 2].data()
                                                          : replicas[step.partner].params + step.begin;
  const float* a = step.left ? own : other;
  const float* b = step.left ? other : own;
  for (size_t t = 0; t < tensors(); ++t) {
    const size_t tlo = std::clamp(bounds[t], step.begin + lo, step.begin + hi) - step.begin;
    const size_t thi = std::clamp(bounds[t + 1], step.begin + lo, step.begin + hi) - step.begin;
    if (thi > tlo)
      LaunchAdasumCombine(stream, own + tlo, a + tlo, b + tlo, thi - tlo, rank.coefficients.data() + 2 * t);
  }
}

// The group's dots gathered (a few doubles from each member), the coefficients from their sums,
// then the combination: first the part that the next level's partner pulls, so that its pull
// overlaps the rest.
void DeviceAdasum::Impl::CombineStep(const AdasumStep& step, size_t level) {
  Gpu& gpu = gpus[gpu_of[step.replica]];
  DeviceGuard guard(gpu.ordinal);
  const cudaStream_t stream = gpu.stream.get();
  Rank& rank = ranks[step.replica];
  const size_t row = kChunks * 3 * tensors();  // one member's dots of one level
  for (size_t k = 0; k < step.group.size(); ++k) {
    const size_t member = step.group[k];
    const double* src = ranks[member].dots.data() + level * row;
    double* dst = rank.rows.data() + k * row;
    if (Remote(step.replica, member)) {
      Gpu& from = gpus[gpu_of[member]];
      XMLT_CUDA_CHECK(cudaStreamWaitEvent(stream, from.event.get(), 0));
      XMLT_CUDA_CHECK(cudaMemcpyPeerAsync(dst, gpu.ordinal, src, from.ordinal, row * sizeof(double), stream));
    } else {
      XMLT_CUDA_CHECK(cudaMemcpyAsync(dst, src, row * sizeof(double), cudaMemcpyDeviceToDevice, stream));
    }
  }
  LaunchAdasumCoefficients(stream, rank.rows.data(), step.group.size() * kChunks, tensors(), rank.coefficients.data());
  const bool sends = step.sent_end > step.sent_begin;
  const size_t sent_lo = sends ? step.sent_begin - step.begin : 0;
  const size_t sent_hi = sends ? step.sent_end - step.begin : 0;
  CombineRange(step, level, sent_lo, sent_hi);
  rank.sendable.Record(stream);
  CombineRange(step, level, 0, sent_lo);
  CombineRange(step, level, sent_hi, step.end - step.begin);
  rank.consumed[level % 2].Record(stream);
}

// The slice that GPU `gpu` gathers in turn `turn`: staggered, so that with one holder per GPU the
// GPUs pull from different holders at each turn, none waiting for another's port.
size_t DeviceAdasum::Impl::SliceInTurn(size_t gpu, size_t turn) const { return (gpu + 1 + turn) % slices.size(); }

// Every slice of the result into this GPU's first replica, chunk by chunk on its copy stream once
// every GPU has finished the reduce-scatter: pulled from the GPUs that hold them, copied within the
// GPU from its other replicas.
void DeviceAdasum::Impl::Gather(size_t g) {
  Gpu& gpu = gpus[g];
  DeviceGuard guard(gpu.ordinal);
  const cudaStream_t stream = gpu.copies.get();
  for (Gpu& other : gpus) XMLT_CUDA_CHECK(cudaStreamWaitEvent(stream, other.event.get(), 0));
  const size_t first = gpu.replicas.front();
  for (size_t turn = 0; turn < slices.size(); ++turn) {
    const size_t j = SliceInTurn(g, turn);
    const AdasumSlice& slice = slices[j];
    if (slice.replica == first) continue;
    for (size_t c = 0; c < kChunks; ++c) {
      const auto [lo, hi] = Piece(0, slice.end - slice.begin, c, kChunks);
      if (hi > lo) {
        float* dst = replicas[first].params + slice.begin + lo;
        const float* src = replicas[slice.replica].params + slice.begin + lo;
        const size_t bytes = (hi - lo) * sizeof(float);
        if (Remote(first, slice.replica)) {
          XMLT_CUDA_CHECK(
              cudaMemcpyPeerAsync(dst, gpu.ordinal, src, gpus[gpu_of[slice.replica]].ordinal, bytes, stream));
        } else {
          XMLT_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, stream));
        }
      }
      gpu.pulled[j * kChunks + c].Record(stream);
    }
  }
  gpu.gathered.Record(stream);
}

// The momentum rule on this GPU's copy of w and w_p, chunk by chunk as the gather brings them in
// (its passes over memory overlap the pulls), the next start into its first replica and from there
// into the others. The first replica's own slice goes first, its next start into `staged` (the
// other GPUs still pull its D), copied in once every GPU has pulled it.
void DeviceAdasum::Impl::Update(size_t g) {
  Gpu& gpu = gpus[g];
  DeviceGuard guard(gpu.ordinal);
  const cudaStream_t stream = gpu.stream.get();
  float* const result = First(gpu);
  auto update = [&](size_t lo, size_t hi, float* start) {
    if (hi > lo)
      LaunchAdasumUpdate(stream, result + lo, start, global.current(g) + lo, global.previous(g) + lo, hi - lo,
                         momentum);
  };
  const size_t first = gpu.replicas.front();
  for (const AdasumSlice& slice : slices)
    if (slice.replica == first) update(slice.begin, slice.end, gpu.staged.data());
  for (size_t turn = 0; turn < slices.size(); ++turn) {
    const size_t j = SliceInTurn(g, turn);
    const AdasumSlice& slice = slices[j];
    if (slice.replica == first) continue;
    for (size_t c = 0; c < kChunks; ++c) {
      XMLT_CUDA_CHECK(cudaStreamWaitEvent(stream, gpu.pulled[j * kChunks + c].get(), 0));
      const auto [lo, hi] = Piece(0, slice.end - slice.begin, c, kChunks);
      update(slice.begin + lo, slice.begin + hi, result + slice.begin + lo);
    }
  }
  for (Gpu& other : gpus) XMLT_CUDA_CHECK(cudaStreamWaitEvent(stream, other.gathered.get(), 0));
  for (const AdasumSlice& slice : slices)
    if (slice.replica == first && slice.end > slice.begin)
      XMLT_CUDA_CHECK(cudaMemcpyAsync(result + slice.begin, gpu.staged.data(),
                                      (slice.end - slice.begin) * sizeof(float), cudaMemcpyDeviceToDevice, stream));
  for (size_t r = 1; r < gpu.replicas.size(); ++r)
    XMLT_CUDA_CHECK(cudaMemcpyAsync(replicas[gpu.replicas[r]].params, result, count * sizeof(float),
                                    cudaMemcpyDeviceToDevice, stream));
}

DeviceAdasum::DeviceAdasum(std::vector<base::ReplicaParams> replicas, size_t count, std::vector<size_t> tensors,
                           DeviceMomentum momentum)
    : impl_(std::make_unique<Impl>()) {
  Impl& m = *impl_;
  for (const GpuReplicaGroup& group : GroupByGpu(replicas, count, "DeviceAdasum")) {
    DeviceGuard guard(group.ordinal);
    m.gpus.emplace_back();
    m.gpus.back().ordinal = group.ordinal;
    m.gpus.back().replicas = group.replicas;
  }
  m.replicas = std::move(replicas);
  m.count = count;
  m.momentum = momentum;
  m.bounds = std::move(tensors);
  if (m.bounds.empty()) m.bounds.push_back(0);
  if (m.bounds[0] != 0) throw std::invalid_argument("DeviceAdasum: the first tensor must start at 0");
  for (size_t t = 1; t < m.bounds.size(); ++t)
    if (m.bounds[t] < m.bounds[t - 1] || m.bounds[t] > count)
      throw std::invalid_argument("DeviceAdasum: tensor offset " + std::to_string(m.bounds[t]) +
                                  " is not ascending within " + std::to_string(count) + " parameters");
  m.bounds.push_back(count);
  m.gpu_of.resize(m.replicas.size());
  for (size_t g = 0; g < m.gpus.size(); ++g)
    for (const size_t i : m.gpus[g].replicas) m.gpu_of[i] = g;
  merge::AdasumSchedule schedule = merge::AdasumReduceScatter(m.replicas.size(), count);
  m.levels = std::move(schedule.levels);
  m.slices = std::move(schedule.slices);
  m.first_sent.assign(m.replicas.size(), {0, 0});
  m.works_first.assign(m.replicas.size(), false);
  if (!m.levels.empty())
    for (const AdasumStep& step : m.levels.front()) {
      m.works_first[step.replica] = true;
      if (m.Remote(step.replica, step.partner)) m.first_sent[step.partner] = {step.begin, step.end};
    }
  // Every GPU pulls slices from every other in the all-gather.
  for (size_t g = 0; g < m.gpus.size(); ++g)
    for (size_t h = g + 1; h < m.gpus.size(); ++h) {
      const int a = m.gpus[g].ordinal, b = m.gpus[h].ordinal;
      if (!EnablePeerAccess(a, b)) m.peer_access = false;
      if (!EnablePeerAccess(b, a)) m.peer_access = false;
    }
  std::vector<std::array<size_t, 2>> received(m.replicas.size(), {0, 0});  // by level parity
  size_t group = 1;
  for (size_t l = 0; l < m.levels.size(); ++l)
    for (const AdasumStep& step : m.levels[l]) {
      size_t& size = received[step.replica][l % 2];
      if (m.Remote(step.replica, step.partner)) size = std::max(size, step.end - step.begin);
      group = std::max(group, step.group.size());
    }
  const size_t row = kChunks * 3 * m.tensors();
  m.ranks.reserve(m.replicas.size());
  for (size_t i = 0; i < m.replicas.size(); ++i) {
    DeviceGuard guard(m.replicas[i].gpu);
    Impl::Rank& rank = m.ranks.emplace_back();  // its events and buffers on its GPU
    for (size_t parity : {0, 1})
      if (received[i][parity] > 0) rank.received[parity] = DeviceBuffer<float>(received[i][parity]);
    rank.dots = DeviceBuffer<double>(std::max<size_t>(1, m.levels.size()) * row);
    rank.rows = DeviceBuffer<double>(group * row);
    rank.coefficients = DeviceBuffer<float>(2 * m.tensors());
  }
  for (Impl::Gpu& gpu : m.gpus) {
    DeviceGuard guard(gpu.ordinal);
    gpu.partial = DeviceBuffer<double>(kAdasumDotsScratch);
    gpu.pulled = std::vector<Event>(m.slices.size() * kChunks);
    for (const AdasumSlice& slice : m.slices)
      if (slice.replica == gpu.replicas.front() && slice.end > slice.begin)
        gpu.staged = DeviceBuffer<float>(slice.end - slice.begin);
  }
  // Every GPU keeps w and w_p whole (the same bits everywhere): the host's copy comes back from the
  // first; each GPU's finite check counts a slice of its own.
  std::vector<DeviceGlobalModel::Layout> layouts;
  for (size_t g = 0; g < m.gpus.size(); ++g) {
    const auto [begin, end] = Piece(0, count, g, m.gpus.size());
    layouts.push_back({m.gpus[g].ordinal, count, {{0, 0, count, g == 0}}, {{begin, end - begin}}});
  }
  m.global = DeviceGlobalModel("DeviceAdasum", std::move(layouts));
}

DeviceAdasum::~DeviceAdasum() = default;

void DeviceAdasum::Merge() {
  Impl& m = *impl_;
  m.global.CheckSetBefore("the merge");
  if (m.count == 0) return;
  // The model's pulls wait for the sender's `sendable` record; the dots' pulls and the gather wait
  // for the GPUs' events, recorded after each phase.
  for (size_t g = 0; g < m.gpus.size(); ++g) m.Deltas(g, true);
  for (size_t g = 0; g < m.gpus.size(); ++g) m.Deltas(g, false);
  for (size_t l = 0; l < m.levels.size(); ++l) {
    for (const AdasumStep& step : m.levels[l]) m.Exchange(step, l);
    m.RecordAll();
    for (const AdasumStep& step : m.levels[l]) m.CombineStep(step, l);
    m.RecordAll();
  }
  // Every gather issued before any update, so that the updates' waits find this merge's records.
  for (size_t g = 0; g < m.gpus.size(); ++g) m.Gather(g);
  for (size_t g = 0; g < m.gpus.size(); ++g) m.Update(g);
  // Receivers first: where streams run only when waited for (the simulated GPUs), a missing wait
  // for a sender then leaves stale values instead of being covered by the sender's earlier sync.
  for (auto gpu = m.gpus.rbegin(); gpu != m.gpus.rend(); ++gpu) gpu->stream.Synchronize();
  for (auto gpu = m.gpus.rbegin(); gpu != m.gpus.rend(); ++gpu) gpu->copies.Synchronize();
}

void DeviceAdasum::SetGlobalModel(const float* current, const float* previous) {
  impl_->global.Upload(current, previous);
}

void DeviceAdasum::GetGlobalModel(float* current, float* previous) { impl_->global.Download(current, previous); }

bool DeviceAdasum::GlobalModelFinite() {
  Impl& m = *impl_;
  std::vector<cudaStream_t> streams;
  for (Impl::Gpu& gpu : m.gpus) streams.push_back(gpu.stream.get());
  return m.global.CountNonFinite(streams) == 0;
}

size_t DeviceAdasum::gpus() const { return impl_->gpus.size(); }
bool DeviceAdasum::peer_access() const { return impl_->peer_access; }

}  // namespace xmlt::merge::gpu
