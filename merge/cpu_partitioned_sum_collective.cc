// The CPU partitioned sum: the model is cut into fixed partitions reduced in parallel, block by
// cache-sized block; within a block the replicas are summed one after another, each partition
// starting at its own replica. Not a ring all-reduce (see collective.h for why not).
#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>

#include <algorithm>
#include <vector>

#include "base/near_equal_pieces.h"
#include "merge/collective.h"
#include "merge/collective_support.h"
#include "merge/replica_blocks.h"

namespace xmlt::merge {
namespace {

// Parameters combined at a time: the block of every replica, the accumulator and what finish
// touches stay in L2, so the write-back to the replicas hits lines that are already cached.
constexpr size_t kBlock = 4096;

class CpuPartitionedSumCollective : public Collective {
 public:
  explicit CpuPartitionedSumCollective(size_t partitions) : partitions_(partitions) {}

  std::vector<double> SquaredNorms(const ReplicaSet& replicas) override {
    CheckReplicaPointers(replicas);
    const size_t n = replicas.count();
    const size_t parts = Partitions(n);
    // partial[p * n + i]: replica i over partition p, summed over p in index order afterwards.
    std::vector<double> partial(parts * n, 0.0);
    tbb::parallel_for(size_t{0}, parts, [&](size_t p) {
      const auto [lo, hi] = base::Piece(0, replicas.size, p, parts);
      if (lo == hi) return;
      for (size_t k = 0; k < n; ++k) {
        const size_t i = (p + k) % n;
        partial[p * n + i] = DeterministicSquaredNorm(replicas.members[i], lo, hi);
      }
    });
    std::vector<double> norms(n, 0.0);
    for (size_t p = 0; p < parts; ++p)
      for (size_t i = 0; i < n; ++i) norms[i] += partial[p * n + i];
    return norms;
  }

  void WeightedAllReduce(const ReplicaSet& replicas, const std::vector<double>& weights,
                         const FinishBlock& finish) override {
    CheckWeightedArguments(replicas, weights);
    const size_t n = replicas.count();
    const size_t parts = Partitions(n);
    tbb::parallel_for(size_t{0}, parts, [&](size_t p) {
      // Plain variables: C++17 lambdas cannot capture structured bindings.
      const auto [lo, hi] = base::Piece(0, replicas.size, p, parts);
      if (lo == hi) return;
      const size_t blocks = (hi - lo + kBlock - 1) / kBlock;
      // Blocks of one partition are independent too, so a partition does not wait on one core
      // when there are fewer partitions than cores; the summation order inside a block is fixed.
      tbb::parallel_for(tbb::blocked_range<size_t>(0, blocks), [&](const auto& r) {
        ReplicaBlocks replica_blocks(replicas, kBlock);
        for (size_t b = r.begin(); b != r.end(); ++b) {
          const size_t begin = lo + b * kBlock;
          const size_t end = std::min(begin + kBlock, hi);
          ReduceBlock(replica_blocks, n, weights, p % n, begin, end, finish);
        }
      });
    });
  }

 private:
  size_t Partitions(size_t replicas) const {
    return std::max<size_t>(1, partitions_ > 0 ? partitions_ : replicas);
  }

  // Sums the replicas' blocks [begin, end) in the order first, first + 1, ... (mod n), finishes the
  // sum and gives it to every replica.
  static void ReduceBlock(ReplicaBlocks& replica_blocks, size_t n, const std::vector<double>& weights, size_t first,
                          size_t begin, size_t end, const FinishBlock& finish) {
    float* const* blocks = replica_blocks.Load(begin, end);
    const size_t m = end - begin;
    // Float accumulation with float weights: double measured 20-40% slower on a 2-core AVX-512
    // machine (the conversions are not free there) and float stays within 1e-6 of the magnitude
    // of the terms for 8 replicas.
    float values[kBlock];
    {
      const float* x = blocks[first];
      const float w = static_cast<float>(weights[first]);
#pragma omp simd
      for (size_t j = 0; j < m; ++j) values[j] = w * x[j];
    }
    for (size_t k = 1; k < n; ++k) {
      const size_t i = (first + k) % n;
      const float* x = blocks[i];
      const float w = static_cast<float>(weights[i]);
#pragma omp simd
      for (size_t j = 0; j < m; ++j) values[j] += w * x[j];
    }
    if (finish) finish(begin, end, values);
    replica_blocks.StoreAll(values);
  }

  size_t partitions_;
};

}  // namespace

std::unique_ptr<Collective> MakeCpuPartitionedSumCollective(size_t partitions) {
  return std::make_unique<CpuPartitionedSumCollective>(partitions);
}

}  // namespace xmlt::merge
