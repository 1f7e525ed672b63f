// Shared pieces of the CPU collectives; see collective_support.h.
#include "merge/collective_support.h"

#include <tbb/blocked_range.h>
#include <tbb/parallel_reduce.h>
#include <tbb/partitioner.h>

#include <stdexcept>
#include <string>

namespace xmlt::merge {
namespace {

// Leaf size of the norm reduction; fixed so the combination tree never changes.
constexpr size_t kNormGrain = 1 << 15;

double SumOfSquares(const float* x, size_t n) {
  double sum = 0.0;
#pragma omp simd reduction(+ : sum)
  for (size_t j = 0; j < n; ++j) sum += static_cast<double>(x[j]) * x[j];
  return sum;
}

}  // namespace

void CheckReplicaPointers(const ReplicaSet& replicas) {
  if (replicas.on_gpus()) throw std::invalid_argument("collective: a host collective given replicas on GPUs");
  for (const base::ReplicaParams& x : replicas.members)
    if (x.params == nullptr && replicas.size > 0)
      throw std::invalid_argument("collective: null replica parameters");
}

void CheckWeightedArguments(const ReplicaSet& replicas, const std::vector<double>& weights) {
  CheckReplicaPointers(replicas);
  const size_t n = replicas.count();
  if (n == 0) throw std::invalid_argument("WeightedAllReduce: no replicas");
  if (weights.size() != n) {
    throw std::invalid_argument("WeightedAllReduce: " + std::to_string(weights.size()) +
                                " weights for " + std::to_string(n) + " replicas");
  }
}

double DeterministicSquaredNorm(const float* x, size_t begin, size_t end) {
  if (begin == end) return 0.0;
  // The simple_partitioner split of a fixed range is fixed, and so is the combination order of
  // parallel_deterministic_reduce.
  return tbb::parallel_deterministic_reduce(
      tbb::blocked_range<size_t>(begin, end, kNormGrain), 0.0,
      [x](const tbb::blocked_range<size_t>& r, double acc) {
        return acc + SumOfSquares(x + r.begin(), r.size());
      },
      [](double a, double b) { return a + b; }, tbb::simple_partitioner());
}

}  // namespace xmlt::merge
