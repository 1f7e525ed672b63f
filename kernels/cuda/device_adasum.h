// The Adasum merge (merge/merger.h, MakeAdasumMerger) on replicas that live in GPU memory, for
// any number of replicas on any GPUs, with the global model w and w_p kept on the GPUs:
//   d_i = w_i - start in place in each replica (start = w, or the Nesterov look-ahead
//   w + gamma (w - w_p)); the d_i combined per tensor by
//     Adasum(a, b) = (1 - a.b / (2 |a|^2)) a + (1 - a.b / (2 |b|^2)) b
//   over merge::PairwiseTreeLevels (merge/adasum.h), replica indices as the host's device indices,
//   so the tree and its order of combination are the host's; w' = start + D (+ gamma (w - w_p)
//   under heavy momentum), w_p = w, w = w', every replica -> the next start.
// Each pair combines into its left operand's buffer on the left operand's GPU. A right operand on
// another GPU is first pulled whole into that GPU's receive buffer by a peer copy; replicas of one
// GPU combine with no copy. Per tensor, a.b, |a|^2 and |b|^2 are block reductions in double, the
// two coefficients are computed from them by a one-block kernel on the same GPU (a squared norm
// below DBL_MIN leaves its coefficient at 1, so a zero operand returns the other) and read by the
// combine kernel from device memory: no value reaches the host during a merge. The root's result
// (in replica 0) then goes down a binomial tree of the GPUs, in order of first appearance, GPU 0
// being replica 0's: at step s = 1, 2, 4, ... GPU k < s pushes it to GPU k + s, into that GPU's
// first replica, whose delta has been consumed by then. Every GPU applies the momentum rule to
// its own full copies of w and w_p (identical on all GPUs: the same bits from the same inputs) and
// writes the next start into its replicas. One stream per GPU; events order the GPUs; the host
// only enqueues, then waits for every stream at the end.
//
// Traffic per merge, with a model of M bytes and G GPUs: the reduction moves M for every pair of
// the tree whose operands sit on different GPUs (right to left), the broadcast moves M into each of
// the G - 1 other GPUs. With one replica per GPU that is (G - 1) M + (G - 1) M = 2 (G - 1) M in
// total, as much as a ring, but not spread evenly: GPU 0 receives ceil(log2 G) models in the
// reduction and sends ceil(log2 G) in the broadcast, where each GPU of a ring sends and receives
// 2 (G - 1) / G of the model; and the 2 ceil(log2 G) whole-model copies on its critical path are
// not overlapped with the arithmetic. Copies are peer copies where the GPUs allow peer access
// (enabled here for every pair that copies), otherwise staged by the runtime through host memory.
//
// Memory per GPU: w and w_p (2 M), a receive buffer (M) on the GPUs that are the left side of a
// pair across GPUs, and scratch of a few thousand doubles for the reductions.
#pragma once

#include <cstddef>
#include <memory>
#include <vector>

#include "kernels/cuda/device_collective.h"

namespace xmlt::kernels::cuda {

class DeviceAdasum {
 public:
  // `replicas` of `count` floats each; `tensors`: the start of each tensor (ascending from 0 and
  // within `count`; empty: one tensor), as merge::ReplicaSet::tensors. Enables peer access between
  // the GPUs that copy to each other where they allow it. Throws std::invalid_argument on no
  // replicas, a null replica or bad tensor offsets, std::runtime_error on CUDA failures.
  DeviceAdasum(std::vector<GpuReplica> replicas, size_t count, std::vector<size_t> tensors, DeviceMomentum momentum);
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

}  // namespace xmlt::kernels::cuda
