// The naive collective: one thread visits the replicas one after the other, block by block, and
// sums in double. The reference the parallel collectives are tested and benchmarked against.
#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <string>

#include "merge/collective.h"

namespace xmlt::merge {
namespace {

// A block keeps the double accumulator and the float result on the stack: no model-sized buffer.
constexpr size_t kBlock = 2048;

class NaiveCollective : public Collective {
 public:
  std::vector<double> SquaredNorms(const ReplicaSet& replicas) override {
    CheckReplicas(replicas);
    std::vector<double> norms(replicas.count(), 0.0);
    for (size_t i = 0; i < replicas.count(); ++i)
      for (size_t j = 0; j < replicas.size; ++j)
        norms[i] += static_cast<double>(replicas.params[i][j]) * replicas.params[i][j];
    return norms;
  }

  void WeightedAllReduce(const ReplicaSet& replicas, const std::vector<double>& weights,
                         const FinishBlock& finish) override {
    CheckReplicas(replicas);
    const size_t n = replicas.count();
    if (n == 0) throw std::invalid_argument("WeightedAllReduce: no replicas");
    if (weights.size() != n) {
      throw std::invalid_argument("WeightedAllReduce: " + std::to_string(weights.size()) +
                                  " weights for " + std::to_string(n) + " replicas");
    }
    double sums[kBlock];
    float values[kBlock];
    for (size_t begin = 0; begin < replicas.size; begin += kBlock) {
      const size_t m = std::min(kBlock, replicas.size - begin);
      std::fill(sums, sums + m, 0.0);
      for (size_t i = 0; i < n; ++i) {
        const float* x = replicas.params[i] + begin;
        for (size_t j = 0; j < m; ++j) sums[j] += weights[i] * x[j];
      }
      for (size_t j = 0; j < m; ++j) values[j] = static_cast<float>(sums[j]);
      if (finish) finish(begin, begin + m, values);
      for (size_t i = 0; i < n; ++i)
        std::memcpy(replicas.params[i] + begin, values, m * sizeof(float));
    }
  }

 private:
  static void CheckReplicas(const ReplicaSet& replicas) {
    for (const float* x : replicas.params)
      if (x == nullptr && replicas.size > 0)
        throw std::invalid_argument("collective: null replica parameters");
  }
};

}  // namespace

std::unique_ptr<Collective> MakeNaiveCollective() { return std::make_unique<NaiveCollective>(); }

}  // namespace xmlt::merge
