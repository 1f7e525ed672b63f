// The CPU tree collective: partitions processed in parallel as in the partitioned sum, but within a
// block the replicas are summed pairwise over adjacent devices, ((r0+r1)+(r2+r3))..., in their own
// buffers.
#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>
#include <tbb/parallel_reduce.h>

#include <algorithm>
#include <stdexcept>
#include <string>

#include "base/near_equal_pieces.h"
#include "merge/adasum.h"
#include "merge/collective.h"
#include "merge/collective_support.h"
#include "merge/replica_blocks.h"

namespace xmlt::merge {
namespace {

// Parameters combined at a time: the n blocks stay in L2 from the tree to the write-back.
constexpr size_t kBlock = 4096;
// left = left_scale * left + right_scale * right; a scale is the device's weight while the
// operand is still a leaf and 1 once it holds a partial sum.
struct Step {
  size_t left, right;
  float left_scale, right_scale;
};

// Odd device counts follow PairwiseTreeLevels (merge/adasum.h), the same tree as Adasum: with
// n = 2^k + m the adjacent pairs (0,1)..(2m-2,2m-1) are folded first, e.g. n=5 sums
// ((r0+r1)+r2)+(r3+r4), so every replica is at depth k or k+1.
class CpuTreeCollective : public Collective {
 public:
  explicit CpuTreeCollective(size_t partitions) : partitions_(partitions) {}

  std::vector<double> SquaredNorms(const ReplicaSet& replicas) override {
    CheckReplicaPointers(replicas);
    std::vector<double> norms(replicas.count(), 0.0);
    tbb::parallel_for(size_t{0}, replicas.count(), [&](size_t i) {
      norms[i] = DeterministicSquaredNorm(replicas.members[i], 0, replicas.size);
    });
    return norms;
  }

  void WeightedAllReduce(const ReplicaSet& replicas, const std::vector<double>& weights,
                         const FinishBlock& finish) override {
    CheckWeightedArguments(replicas, weights);
    const size_t n = replicas.count();
    std::vector<Step> steps;
    std::vector<bool> leaf(n, true);
    for (const auto& level : PairwiseTreeLevels(n)) {
      for (const TreePair& pair : level) {
        steps.push_back({pair.left, pair.right,
                         leaf[pair.left] ? static_cast<float>(weights[pair.left]) : 1.0f,
                         leaf[pair.right] ? static_cast<float>(weights[pair.right]) : 1.0f});
        leaf[pair.left] = leaf[pair.right] = false;
      }
    }
    // One device: its weight is applied alone.
    const float root_scale = n == 1 ? static_cast<float>(weights[0]) : 1.0f;
    const size_t parts = std::max<size_t>(1, partitions_ > 0 ? partitions_ : n);
    tbb::parallel_for(size_t{0}, parts, [&](size_t p) {
      const auto [lo, hi] = base::Piece(0, replicas.size, p, parts);
      const size_t blocks = (hi - lo + kBlock - 1) / kBlock;
      tbb::parallel_for(tbb::blocked_range<size_t>(0, blocks), [&](const auto& r) {
        ReplicaBlocks replica_blocks(replicas, kBlock);
        for (size_t b = r.begin(); b != r.end(); ++b) {
          const size_t begin = lo + b * kBlock;
          const size_t end = std::min(begin + kBlock, hi);
          ReduceBlock(replica_blocks, steps, root_scale, begin, end, finish);
        }
      });
    });
  }

 private:

  // In place: every replica's block [begin, end) is overwritten at the end anyway, so the partial
  // sums live in the left operands' own (cached) blocks and no buffer is needed.
  static void ReduceBlock(ReplicaBlocks& replica_blocks, const std::vector<Step>& steps, float root_scale,
                          size_t begin, size_t end, const FinishBlock& finish) {
    float* const* blocks = replica_blocks.Load(begin, end);
    const size_t m = end - begin;
    for (const Step& s : steps) {
      float* a = blocks[s.left];
      const float* b = blocks[s.right];
      const float wa = s.left_scale, wb = s.right_scale;
#pragma omp simd
      for (size_t j = 0; j < m; ++j) a[j] = wa * a[j] + wb * b[j];
    }
    float* root = blocks[0];
    if (root_scale != 1.0f) {
#pragma omp simd
      for (size_t j = 0; j < m; ++j) root[j] *= root_scale;
    }
    if (finish) finish(begin, end, root);
    replica_blocks.StoreAll(root);
  }

  size_t partitions_;
};

}  // namespace

std::unique_ptr<Collective> MakeCpuTreeCollective(size_t partitions) {
  return std::make_unique<CpuTreeCollective>(partitions);
}

}  // namespace xmlt::merge
