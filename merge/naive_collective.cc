// The naive collective: one thread visits the replicas one after the other, block by block, and
// sums in double. The reference the parallel collectives are tested and benchmarked against.
#include <algorithm>
#include <stdexcept>
#include <string>

#include "merge/collective.h"
#include "merge/collective_support.h"
#include "merge/replica_blocks.h"

namespace xmlt::merge {
namespace {

// A block keeps the double accumulator and the float result on the stack: no model-sized buffer.
constexpr size_t kBlock = 2048;

class NaiveCollective : public Collective {
 public:
  std::vector<double> SquaredNorms(const ReplicaSet& replicas) override {
    CheckReplicaPointers(replicas);
    std::vector<double> norms(replicas.count(), 0.0);
    ReplicaBlocks blocks(replicas, kBlock);
    for (size_t begin = 0; begin < replicas.size; begin += kBlock) {
      const size_t m = std::min(kBlock, replicas.size - begin);
      float* const* x = blocks.Load(begin, begin + m);
      for (size_t i = 0; i < replicas.count(); ++i)
        for (size_t j = 0; j < m; ++j) norms[i] += static_cast<double>(x[i][j]) * x[i][j];
    }
    return norms;
  }

  void WeightedAllReduce(const ReplicaSet& replicas, const std::vector<double>& weights,
                         const FinishBlock& finish) override {
    CheckWeightedArguments(replicas, weights);
    const size_t n = replicas.count();
    double sums[kBlock];
    float values[kBlock];
    ReplicaBlocks blocks(replicas, kBlock);
    for (size_t begin = 0; begin < replicas.size; begin += kBlock) {
      const size_t m = std::min(kBlock, replicas.size - begin);
      float* const* x = blocks.Load(begin, begin + m);
      std::fill(sums, sums + m, 0.0);
      for (size_t i = 0; i < n; ++i)
        for (size_t j = 0; j < m; ++j) sums[j] += weights[i] * x[i][j];
      for (size_t j = 0; j < m; ++j) values[j] = static_cast<float>(sums[j]);
      if (finish) finish(begin, begin + m, values);
      blocks.StoreAll(values);
    }
  }

 private:
};

}  // namespace

std::unique_ptr<Collective> MakeNaiveCollective() { return std::make_unique<NaiveCollective>(); }

}  // namespace xmlt::merge
