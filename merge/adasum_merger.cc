// Adasum as a model merge: the replicas' deltas from the round's common starting point combined
// by the Adasum all-reduce, with the global momentum rule (heavy ball or Nesterov look-ahead).
#include <algorithm>
#include <stdexcept>
#include <string>

#include "merge/adasum.h"
#include "merge/merge_checks.h"
#include "merge/merger.h"
#include "merge/replica_blocks.h"

namespace xmlt::merge {
namespace {

class AdasumMerger : public Merger {
 public:
  explicit AdasumMerger(const MergeOptions& options) : options_(options) {}

  MergeOutcome Merge(const ReplicaSet& replicas, const MergeInput& input,
                     GlobalModel* global) override {
    CheckReplicasAndGlobal(replicas, global);
    CheckOnHost(replicas, global, name());
    const size_t n = replicas.count();
    CheckOptionalInput(input, n, "adasum");
    const float gamma = static_cast<float>(options_.momentum);
    const bool nesterov = options_.momentum_mode == MomentumMode::kNesterov;
    float* const w = global->MutableCurrent().data();
    float* const wp = global->MutablePrevious().data();
    // The starting point the replicas were given by the previous merge is recomputed from w and
    // w_p with the same expression in both callbacks, so deltas and update agree to the bit.
    // Under kNesterov the look-ahead already is the momentum step: no extra term at the end.
    // bf16 replicas began from that start rounded to nearest (merge/replica_blocks.h: StoreAll):
    // their deltas are taken from there, so the rounding is neither a delta of its own nor in w.
    const bool bf16 = replicas.in_bf16();
    const PrepareBlock to_delta = [=](size_t, size_t begin, size_t end, float* x) {
      const float* cw = w + begin;
      const float* cp = wp + begin;
      const size_t m = end - begin;
      if (bf16) {
        float scratch[kRoundedStartPiece], rounded[kRoundedStartPiece];
        for (size_t at = 0; at < m; at += kRoundedStartPiece) {
          const size_t k = std::min(kRoundedStartPiece, m - at);
          RoundedStart(cw + at, cp + at, gamma, nesterov, k, scratch, rounded);
#pragma omp simd
          for (size_t j = 0; j < k; ++j) x[at + j] -= rounded[j];
        }
      } else if (nesterov) {
#pragma omp simd
        for (size_t j = 0; j < m; ++j) x[j] -= cw[j] + gamma * (cw[j] - cp[j]);
      } else {
#pragma omp simd
        for (size_t j = 0; j < m; ++j) x[j] -= cw[j];
      }
    };
    const FinishBlock update = [=](size_t begin, size_t end, float* values) {
      float* cw = w + begin;
      float* cp = wp + begin;
      const size_t m = end - begin;
      if (nesterov) {
#pragma omp simd
        for (size_t j = 0; j < m; ++j) {
          const float next = (cw[j] + gamma * (cw[j] - cp[j])) + values[j];
          values[j] = next + gamma * (next - cw[j]);
          cp[j] = cw[j];
          cw[j] = next;
        }
      } else {
#pragma omp simd
        for (size_t j = 0; j < m; ++j) {
          const float next = cw[j] + values[j] + gamma * (cw[j] - cp[j]);
          values[j] = next;
          cp[j] = cw[j];
          cw[j] = next;
        }
      }
    };
    AdasumAllReduce(replicas, to_delta, update);

    MergeOutcome outcome;
    outcome.weights.assign(n, 1.0);  // Adasum's coefficients are per tensor and pair, not scalar
    return outcome;
  }

  std::string name() const override { return "adasum"; }

 private:
  MergeOptions options_;
};

}  // namespace

std::unique_ptr<Merger> MakeAdasumMerger(const MergeOptions& options) {
  return std::make_unique<AdasumMerger>(options);
}

}  // namespace xmlt::merge
