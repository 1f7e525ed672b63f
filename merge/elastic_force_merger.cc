// Elastic force merge (EASGD, CROSSBOW's synchronous model averaging): each replica is pulled
// toward the center x by c_j = a (z_j - x) and keeps its own state; x moves by the sum of the pulls.
#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>

#include <algorithm>
#include <stdexcept>
#include <string>

#include "merge/merge_checks.h"
#include "merge/merger.h"
#include "merge/replica_blocks.h"

namespace xmlt::merge {
namespace {

// Parameters per block: the old center, the sum of pulls and the block of every replica stay in
// L2. Each parameter's result depends only on the fixed replica order, never on the blocking or
// the thread count, so the merge is deterministic.
constexpr size_t kBlock = 4096;

class ElasticForceMerger : public Merger {
 public:
  explicit ElasticForceMerger(const MergeOptions& options) : options_(options) {
    if (options_.momentum_mode == MomentumMode::kNesterov) {
      // Replicas keep their own state instead of restarting from a common point, so there is no
      // common look-ahead point to restart them from.
      throw std::invalid_argument(
          "elastic force merge: Nesterov momentum is not supported (replicas keep their own "
          "state, so there is no common look-ahead point); use heavy momentum");
    }
    const double a = options_.elastic_alpha;
    if (!(a >= 0.0 && a <= 1.0)) {
      throw std::invalid_argument(
          "elastic force merge: elastic alpha must be in (0, 1] (0 means 1/n), got " +
          std::to_string(a));
    }
  }

  MergeOutcome Merge(const ReplicaSet& replicas, const MergeInput& input,
                     GlobalModel* global) override {
    CheckReplicasAndGlobal(replicas, global);
    CheckOnHost(replicas, global, name());
    const size_t n = replicas.count();
    CheckOptionalInput(input, n, "elastic force");
    const double a = options_.elastic_alpha > 0.0 ? options_.elastic_alpha
                                                   : 1.0 / static_cast<double>(n);
    MergeOutcome outcome;
    outcome.weights.assign(n, a);

    const size_t size = replicas.size;
    const size_t blocks = (size + kBlock - 1) / kBlock;
    // Taken once, before the blocks run in parallel: the accessors record where the model is.
    float* const center = global->MutableCurrent().data();
    float* const center_prev = global->MutablePrevious().data();
    tbb::parallel_for(tbb::blocked_range<size_t>(0, blocks), [&](const auto& r) {
      ReplicaBlocks replica_blocks(replicas, kBlock);
      for (size_t b = r.begin(); b != r.end(); ++b) {
        const size_t begin = b * kBlock;
        const size_t end = std::min(begin + kBlock, size);
        PullBlock(replica_blocks.Load(begin, end), n, static_cast<float>(a), begin, end, center, center_prev);
        replica_blocks.Store();
      }
    });
    return outcome;
  }

  std::string name() const override { return "elastic_force"; }

 private:
  // blocks[i]: replica i's [begin, end) as fp32 (merge/replica_blocks.h: bf16 replicas widened,
  // and each z_j - c_j rounded back with the set's noise).
  void PullBlock(float* const* blocks, size_t n, float a, size_t begin, size_t end, float* center,
                 float* center_prev) const {
    const size_t m = end - begin;
    float* x = center + begin;
    float* x_prev = center_prev + begin;
    // The center is read once, before any replica moves it: every pull uses the old x.
    float x_old[kBlock];
    float pulls[kBlock];
    std::copy(x, x + m, x_old);
    std::fill(pulls, pulls + m, 0.0f);
    for (size_t i = 0; i < n; ++i) {
      float* z = blocks[i];
#pragma omp simd
      for (size_t j = 0; j < m; ++j) {
        const float c = a * (z[j] - x_old[j]);
        z[j] -= c;
        pulls[j] += c;
      }
    }
    const float gamma = static_cast<float>(options_.momentum);
#pragma omp simd
    for (size_t j = 0; j < m; ++j) {
      x[j] = x_old[j] + pulls[j] + gamma * (x_old[j] - x_prev[j]);
      x_prev[j] = x_old[j];
    }
  }

  MergeOptions options_;
};

}  // namespace

// The collective is not used: it writes one common value into every replica, while here each
// replica gets its own z_j - c_j. The merge runs directly over fixed blocks instead.
std::unique_ptr<Merger> MakeElasticForceMerger(const MergeOptions& options,
                                               std::shared_ptr<Collective> /*collective*/) {
  return std::make_unique<ElasticForceMerger>(options);
}

}  // namespace xmlt::merge
