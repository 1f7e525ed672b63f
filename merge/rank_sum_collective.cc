// The hierarchical collective across ranks; see rank_sum_collective.h.
#include "merge/rank_sum_collective.h"

#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>

#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <string>
#include <utility>

#include "merge/collective_support.h"
#include "merge/merge_checks.h"
#include "merge/replica_blocks.h"

namespace xmlt::merge {
namespace {

// Parameters finished and copied at a time: small enough to stay in L2 between the two.
constexpr size_t kBlock = 4096;

class RankSumCollective : public Collective {
 public:
  RankSumCollective(std::unique_ptr<Collective> local, ranks::RankGroup& ranks, std::vector<bool> is_local)
      : local_(std::move(local)), ranks_(ranks), is_local_(std::move(is_local)) {
    if (!local_) throw std::invalid_argument("rank sum collective: no local collective");
  }

  std::vector<double> SquaredNorms(const ReplicaSet& replicas) override {
    CheckCount(replicas);
    const ReplicaSet mine = Local(replicas);
    std::vector<double> norms(replicas.count(), 0.0);
    if (mine.count() > 0) {
      const std::vector<double> local_norms = local_->SquaredNorms(mine);
      for (size_t i = 0, k = 0; i < replicas.count(); ++i)
        if (is_local_[i]) norms[i] = local_norms[k++];
    }
    // Every norm has one owner and zeros elsewhere, so the sum is exact: the owner's bits.
    ranks_.SumInPlace(norms.data(), norms.size());
    return norms;
  }

  void WeightedAllReduce(const ReplicaSet& replicas, const std::vector<double>& weights,
                         const FinishBlock& finish) override {
    CheckCount(replicas);
    if (weights.size() != replicas.count())
      throw std::invalid_argument("rank sum collective: " + std::to_string(weights.size()) + " weights for " +
                                  std::to_string(replicas.count()) + " replicas");
    // The other ranks' replicas may be null: only this rank's are read (and checked).
    const ReplicaSet mine = Local(replicas);
    CheckReplicaPointers(mine);
    if (replicas.in_bf16()) return WeightedAllReduceBf16(replicas, mine, weights, finish);
    float* total = nullptr;
    if (mine.count() > 0) {
      std::vector<double> my_weights;
      for (size_t i = 0; i < replicas.count(); ++i)
        if (is_local_[i]) my_weights.push_back(weights[i]);
      // The rank's partial sum lands in every local replica; the first one carries it on.
      local_->WeightedAllReduce(mine, my_weights, nullptr);
      total = mine.members[0].params;
    } else {
      // Every device of this rank has dropped: it still adds its zeros, as the others wait for it.
      no_replicas_.assign(replicas.size, 0.0f);
      total = no_replicas_.data();
    }
    ranks_.SumInPlace(total, replicas.size);
    const size_t blocks = (replicas.size + kBlock - 1) / kBlock;
    tbb::parallel_for(tbb::blocked_range<size_t>(0, blocks), [&](const tbb::blocked_range<size_t>& r) {
      for (size_t b = r.begin(); b != r.end(); ++b) {
        const size_t begin = b * kBlock, end = std::min(begin + kBlock, replicas.size);
        if (finish) finish(begin, end, total + begin);
        for (size_t k = 1; k < mine.count(); ++k)
          std::memcpy(mine.members[k].params + begin, total + begin, (end - begin) * sizeof(float));
      }
    });
    no_replicas_ = {};
  }

 private:
  // bf16 replicas cannot carry the rank's partial sum, so it goes through an fp32 buffer a chunk
  // of the model at a time: the local collective sums this rank's replicas of the chunk (its
  // finish copies the sums out; sums_only: it writes nothing back), the ranks add their partial
  // sums, and every rank finishes the total and gives this rank's replicas the result rounded to
  // nearest (ReplicaBlocks::StoreAll), the same bits on every rank.
  void WeightedAllReduceBf16(const ReplicaSet& replicas, const ReplicaSet& mine, const std::vector<double>& weights,
                             const FinishBlock& finish) {
    for (const base::ReplicaParams& x : mine.members)
      if (!x.in_bf16() && replicas.size > 0)
        throw std::invalid_argument("rank sum collective: the run keeps its weights in bf16, a replica here in fp32");
    std::vector<double> my_weights;
    for (size_t i = 0; i < replicas.count(); ++i)
      if (is_local_[i]) my_weights.push_back(weights[i]);
    std::vector<float> partial(std::min(kRankSumBf16Chunk, replicas.size));
    for (size_t at = 0; at < replicas.size; at += kRankSumBf16Chunk) {
      const size_t count = std::min(kRankSumBf16Chunk, replicas.size - at);
      std::fill(partial.begin(), partial.begin() + count, 0.0f);  // a rank with no replicas adds zeros
      if (mine.count() > 0) {
        ReplicaSet chunk;
        chunk.size = count;
        chunk.sums_only = true;
        for (const base::ReplicaParams& x : mine.members) chunk.members.push_back({nullptr, -1, x.bf16 + at});
        local_->WeightedAllReduce(chunk, my_weights, [&](size_t begin, size_t end, float* values) {
          std::copy(values, values + (end - begin), partial.data() + begin);
        });
      }
      ranks_.SumInPlace(partial.data(), count);
      const size_t blocks = (count + kBlock - 1) / kBlock;
      tbb::parallel_for(tbb::blocked_range<size_t>(0, blocks), [&](const tbb::blocked_range<size_t>& r) {
        ReplicaBlocks replica_blocks(mine, kBlock);
        for (size_t b = r.begin(); b != r.end(); ++b) {
          const size_t begin = at + b * kBlock, end = std::min(begin + kBlock, at + count);
          float* total = partial.data() + (begin - at);
          if (finish) finish(begin, end, total);
          replica_blocks.Select(begin, end);
          replica_blocks.StoreAll(total);
        }
      });
    }
  }

  void CheckCount(const ReplicaSet& replicas) const {
    if (replicas.count() != is_local_.size())
      throw std::invalid_argument("rank sum collective: " + std::to_string(replicas.count()) +
                                  " replicas for " + std::to_string(is_local_.size()) + " devices");
  }

  ReplicaSet Local(const ReplicaSet& replicas) const {
    ReplicaSet mine;
    mine.size = replicas.size;
    mine.tensors = replicas.tensors;
    for (size_t i = 0; i < replicas.count(); ++i)
      if (is_local_[i]) mine.members.push_back(replicas.members[i]);
    return mine;
  }

  std::unique_ptr<Collective> local_;
  ranks::RankGroup& ranks_;
  std::vector<bool> is_local_;
  std::vector<float> no_replicas_;
};

}  // namespace

std::unique_ptr<Collective> MakeRankSumCollective(std::unique_ptr<Collective> local, ranks::RankGroup& ranks,
                                                  std::vector<bool> is_local) {
  return std::make_unique<RankSumCollective>(std::move(local), ranks, std::move(is_local));
}

}  // namespace xmlt::merge
