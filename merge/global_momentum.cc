// The global momentum rule (heavy-ball or Nesterov look-ahead) fused into the collective's
// per-block finish step.
#include "merge/global_momentum.h"

#include <algorithm>

#include "merge/replica_blocks.h"

namespace xmlt::merge {

namespace {

// values[j] += weight (start - rounded start): the replicas' start (merge/replica_blocks.h:
// RoundedStart), a piece at a time.
void MoveToTheUnroundedStart(const float* w, const float* wp, float gamma, bool nesterov, float weight,
                             float* values, size_t m) {
  float scratch[kRoundedStartPiece], rounded[kRoundedStartPiece];
  for (size_t at = 0; at < m; at += kRoundedStartPiece) {
    const size_t k = std::min(kRoundedStartPiece, m - at);
    const float* start = RoundedStart(w + at, wp + at, gamma, nesterov, k, scratch, rounded);
#pragma omp simd
    for (size_t j = 0; j < k; ++j) values[at + j] += weight * (start[j] - rounded[j]);
  }
}

}  // namespace

FinishBlock GlobalMomentumFinish(GlobalModel* global, double momentum, MomentumMode mode, double start_weight) {
  // Fetched first if newer on the GPUs; the host vectors are the model from here on.
  float* current = global->MutableCurrent().data();
  float* previous = global->MutablePrevious().data();
  const float gamma = static_cast<float>(momentum);
  const float moved = static_cast<float>(start_weight);
  if (mode == MomentumMode::kNesterov) {
    // The replicas started from the look-ahead w + gamma (w - w_p), so their combination already
    // carries the momentum step; the next look-ahead is written back for the replicas only.
    return [=](size_t begin, size_t end, float* values) {
      float* w = current + begin;
      float* wp = previous + begin;
      const size_t m = end - begin;
      if (moved != 0.0f) MoveToTheUnroundedStart(w, wp, gamma, true, moved, values, m);
#pragma omp simd
      for (size_t j = 0; j < m; ++j) {
        const float next = values[j];
        wp[j] = w[j];
        w[j] = next;
        values[j] = next + gamma * (next - wp[j]);
      }
    };
  }
  return [=](size_t begin, size_t end, float* values) {
    float* w = current + begin;
    float* wp = previous + begin;
    const size_t m = end - begin;
    if (moved != 0.0f) MoveToTheUnroundedStart(w, wp, gamma, false, moved, values, m);
#pragma omp simd
    for (size_t j = 0; j < m; ++j) {
      const float next = values[j] + gamma * (w[j] - wp[j]);
      wp[j] = w[j];
      w[j] = next;
      values[j] = next;
    }
  };
}

void Collective::WeightedAllReduceWithMomentum(const ReplicaSet& replicas, const std::vector<double>& weights,
                                               double momentum, MomentumMode mode, GlobalModel* global) {
  // bf16 replicas began from their start rounded to nearest: the finish takes their changes from it.
  double start_weight = 0.0;
  if (replicas.in_bf16())
    for (double a : weights) start_weight += a;
  WeightedAllReduce(replicas, weights, GlobalMomentumFinish(global, momentum, mode, start_weight));
}

void MergeWithGlobalMomentum(Collective& collective, const ReplicaSet& replicas,
                             const std::vector<double>& weights, double momentum,
                             GlobalModel* global, MomentumMode mode) {
  collective.WeightedAllReduceWithMomentum(replicas, weights, momentum, mode, global);
}

}  // namespace xmlt::merge
