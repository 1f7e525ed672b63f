// The global momentum rule (heavy-ball or Nesterov look-ahead) fused into the collective's
// per-block finish step.
#include "merge/global_momentum.h"

namespace xmlt::merge {

FinishBlock GlobalMomentumFinish(GlobalModel* global, double momentum, MomentumMode mode) {
  // Fetched first if newer on the GPUs; the host vectors are the model from here on.
  float* current = global->MutableCurrent().data();
  float* previous = global->MutablePrevious().data();
  const float gamma = static_cast<float>(momentum);
  if (mode == MomentumMode::kNesterov) {
    // The replicas started from the look-ahead w + gamma (w - w_p), so their combination already
    // carries the momentum step; the next look-ahead is written back for the replicas only.
    return [=](size_t begin, size_t end, float* values) {
      float* w = current + begin;
      float* wp = previous + begin;
      const size_t m = end - begin;
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
  WeightedAllReduce(replicas, weights, GlobalMomentumFinish(global, momentum, mode));
}

void MergeWithGlobalMomentum(Collective& collective, const ReplicaSet& replicas,
                             const std::vector<double>& weights, double momentum,
                             GlobalModel* global, MomentumMode mode) {
  collective.WeightedAllReduceWithMomentum(replicas, weights, momentum, mode, global);
}

}  // namespace xmlt::merge
