// Blocks of host replicas as fp32; see replica_blocks.h.
#include "merge/replica_blocks.h"

#include <tbb/blocked_range.h>
#include <tbb/parallel_reduce.h>
#include <tbb/partitioner.h>

#include <algorithm>

#include "kernels/cpu/vector_ops.h"

namespace xmlt::merge {
namespace {

// Leaf size of the norm reduction; fixed so the combination tree never changes.
constexpr size_t kNormGrain = 1 << 15;

// Values summed by one vector loop: the compiler's order of the sum inside it is its own, so bf16
// values are widened a chunk at a time and summed by this same loop.
constexpr size_t kSquaresChunk = 4096;

double SumOfSquares(const float* x, size_t n) {
  double sum = 0.0;
#pragma omp simd reduction(+ : sum)
  for (size_t j = 0; j < n; ++j) sum += static_cast<double>(x[j]) * x[j];
  return sum;
}

double ChunkedSumOfSquares(const base::ReplicaParams& x, size_t begin, size_t end) {
  float widened[kSquaresChunk];
  double sum = 0.0;
  for (size_t at = begin; at < end; at += kSquaresChunk) {
    const size_t m = std::min(kSquaresChunk, end - at);
    if (!x.in_bf16()) {
      sum += SumOfSquares(x.params + at, m);
      continue;
    }
    kernels::cpu::vector_ops::WidenBf16s(x.bf16 + at, widened, m);
    sum += SumOfSquares(widened, m);
  }
  return sum;
}

}  // namespace

ReplicaBlocks::ReplicaBlocks(const ReplicaSet& replicas, size_t block)
    : replicas_(replicas), block_(block), blocks_(replicas.count(), nullptr) {
  if (replicas.in_bf16()) scratch_.resize(replicas.count() * block);
}

float* const* ReplicaBlocks::Load(size_t begin, size_t end) {
  begin_ = begin;
  end_ = end;
  const size_t n = replicas_.count();
  if (scratch_.empty()) {
    for (size_t i = 0; i < n; ++i) blocks_[i] = replicas_.members[i].params + begin;
    return blocks_.data();
  }
  for (size_t i = 0; i < n; ++i) {
    blocks_[i] = scratch_.data() + i * block_;
    kernels::cpu::vector_ops::WidenBf16s(replicas_.members[i].bf16 + begin, blocks_[i], end - begin);
  }
  return blocks_.data();
}

void ReplicaBlocks::Store() {
  if (scratch_.empty()) return;
  for (size_t i = 0; i < replicas_.count(); ++i)
    kernels::cpu::vector_ops::RoundBf16(blocks_[i], replicas_.members[i].bf16 + begin_, end_ - begin_,
                                        replicas_.bf16_rounding_key, begin_);
}

double DeterministicSquaredNorm(const base::ReplicaParams& x, size_t begin, size_t end) {
  if (begin == end) return 0.0;
  // The simple_partitioner split of a fixed range is fixed, and so is the combination order of
  // parallel_deterministic_reduce.
  return tbb::parallel_deterministic_reduce(
      tbb::blocked_range<size_t>(begin, end, kNormGrain), 0.0,
      [&x](const tbb::blocked_range<size_t>& r, double acc) { return acc + ChunkedSumOfSquares(x, r.begin(), r.end()); },
      [](double a, double b) { return a + b; }, tbb::simple_partitioner());
}

}  // namespace xmlt::merge
