// The Adasum merge (merge/merger.h, MakeAdasumMerger) on replicas that live in GPU memory, for
// any number of replicas on any GPUs, with the global model w and w_p kept on the GPUs:
//   d_i = w_i - start in place in each replica (start = w, or the Nesterov look-ahead
//   w + gamma (w - w_p)); the d_i combined per tensor by
//     Adasum(a, b) = (1 - a.b / (2 |a|^2)) a + (1 - a.b / (2 |b|^2)) b
//   over merge::PairwiseTreeLevels (merge/adasum.h), replica indices as the host's device indices,
//   so the tree and its order of combination are the host's; w' = start + D (+ gamma (w - w_p)
//   under heavy momentum), w_p = w, w = w', every replica -> the next start.
// The tree runs as a reduce-scatter, vector halving with distance doubling (Maleki et al.,
// "Scaling Distributed Training with Adaptive Summation", Algorithm 1, as in Horovod), extended to
// any replica count by the host tree's own first level (merge::AdasumReduceScatter): with
// n = 2^k + m, the m pairs (2i, 2i + 1) of that level are combined whole on replica 2i, the right
// operand pulled over; then at each of k levels every remaining replica swaps half of its current
// range with its partner at distance 2^l among the 2^k operands, computes the per-tensor partial
// a.b, |a|^2, |b|^2 of its half in double, the 2^(l+1) replicas that hold the two operands sum
// those partial dots (3 doubles per tensor and pipeline chunk, gathered from each, summed in one
// fixed order, so every piece of a vector gets the same coefficients), and each combines its half
// in place. Then
// every GPU gathers the 2^k final pieces into its first replica, applies the momentum rule to its
// own full copies of w and w_p (identical on all GPUs: the same bits from the same inputs) and
// writes the next start into its replicas. Partners on one GPU (`cuda:0x4`) read each other's
// buffers with no copy; partners on distinct GPUs pull by peer copies. A squared norm below
// DBL_MIN leaves its coefficient at 1 (a zero operand returns the other). No value reaches the
// host during a merge. Two streams per GPU, one for the arithmetic and one for the pulls, so that
// copies overlap kernels: the first level's pull starts once the sender has the deltas of the
// range pulled and overlaps the rest of its deltas; each level combines first the part that the
// next level's partner pulls; the gather pulls the slices in a staggered order (no two GPUs pull
// from one holder at once) and the update follows it chunk by chunk. Events order the streams;
// the host only enqueues, then waits for every stream at the end.
//
// Traffic per merge, with a model of M bytes, one replica per GPU and n = 2^k GPUs: each GPU
// sends and receives M/2 + M/4 + ... = (n - 1)/n M in the reduce-scatter and (n - 1)/n M in the
// gather, 2 (n - 1)/n M in all as in a ring, plus 24 bytes per tensor and pipeline chunk from each
// other member of each level's group (2^(l+1) - 1 members at level l). With m > 0, each folded pair
// across GPUs moves M more (right to left), and a GPU holding only folded right operands receives
// the whole result, M, in the gather. Several replicas of one GPU add no peer traffic among themselves.
// Copies are peer copies where the GPUs allow peer access (enabled here for every pair of them),
// otherwise staged by the runtime through host memory.
//
// Memory per GPU: w and w_p (2 M); for each replica whose partner lives on another GPU, two receive
// buffers (levels alternate between them, so that a pull need not wait for the previous level's
// combination), of the largest range it pulls at even and at odd levels (M/2 and M/4 rounded up;
// M for a folded pair's left operand); the next start of its first replica's slice (M/2^k); and a
// few thousand doubles of scratch for the dots.
#pragma once

#include <cstddef>
#include <memory>
#include <vector>

#include "merge/gpu/device_collective.h"

namespace xmlt::merge::gpu {

class DeviceAdasum {
 public:
  // The pulls of each level's range and of each slice of the gather are cut into this many chunks,
  // each followed by the arithmetic on it while the next one is copied; each level's dots are kept
  // per chunk (3 doubles per tensor and chunk), summed in one fixed order. On the simulator's clock
  // (docs/BENCHMARKS.md) with the Amazon-670K model on NVLink, 1, 2 and 4 chunks projected 1.32x,
  // 1.21x to 1.25x and 1.17x to 1.22x the ring's sum; for a 40 MB model, where each copy's latency
  // (which holds up its stream) weighs more, 4 chunks lost up to 14% at 8 GPUs.
  static constexpr size_t kPipelineChunks = 4;

  // `replicas` of `count` floats each; `tensors`: the start of each tensor (ascending from 0 and
  // within `count`; empty: one tensor), as merge::ReplicaSet::tensors. Enables peer access between
  // the GPUs that copy to each other where they allow it. Throws std::invalid_argument on no
  // replicas, a null replica or bad tensor offsets, std::runtime_error on CUDA failures.
  DeviceAdasum(std::vector<base::ReplicaParams> replicas, size_t count, std::vector<size_t> tensors,
               DeviceMomentum momentum);
  ~DeviceAdasum();
  DeviceAdasum(const DeviceAdasum&) = delete;
  DeviceAdasum& operator=(const DeviceAdasum&) = delete;

  // One merge, as above; returns when every replica holds the next start. std::logic_error before
  // SetGlobalModel.
  void Merge();

  // w and w_p (`count` floats each, host memory) onto every GPU, and back from GPU 0.
  void SetGlobalModel(const float* current, const float* previous);
  void GetGlobalModel(float* current, float* previous);
  // Whether every value of w is finite: each GPU counts a slice of its copy, only a flag reaches
  // the host.
  bool GlobalModelFinite();

  size_t gpus() const;       // distinct GPUs, in order of first appearance
  bool peer_access() const;  // whether every pair of GPUs that copies does so directly

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace xmlt::merge::gpu
