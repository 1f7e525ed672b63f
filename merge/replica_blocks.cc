// Blocks of host replicas as fp32; see replica_blocks.h.
#include "merge/replica_blocks.h"

#include <tbb/blocked_range.h>
#include <tbb/parallel_reduce.h>
#include <tbb/partitioner.h>

#include <cstdint>
#include <cstring>
#include <stdexcept>

#include "kernels/cpu/stochastic_rounding.h"
#include "kernels/cpu/vector_ops.h"

namespace xmlt::merge {
namespace {

// Leaf size of the norm reduction; fixed so the combination tree never changes.
constexpr size_t kNormGrain = 1 << 15;

// The sum of squares in 32 lanes, each summing every 32nd value, the lanes then added in a fixed
// order: an order written out, so fp32 values and widened bf16 ones give the same bits (a
// compiler's vector reduction picks its own order, and another for another element type), and
// 32 lanes keep enough additions in flight for the loads.
constexpr size_t kLanes = 32;

inline double Value(float x) { return x; }
inline double Value(uint16_t x) { return kernels::cpu::WidenBf16(x); }

template <class T>
double SumOfSquares(const T* x, size_t n) {
  double lanes[kLanes] = {};
  size_t j = 0;
  for (; j + kLanes <= n; j += kLanes)
    for (size_t k = 0; k < kLanes; ++k) lanes[k] += Value(x[j + k]) * Value(x[j + k]);
  for (size_t k = 0; j + k < n; ++k) lanes[k] += Value(x[j + k]) * Value(x[j + k]);
  double sum = 0.0;
  for (double lane : lanes) sum += lane;
  return sum;
}

}  // namespace

ReplicaBlocks::ReplicaBlocks(const ReplicaSet& replicas, size_t block)
    : replicas_(replicas), block_(block), blocks_(replicas.count(), nullptr) {
  if (replicas.sums_only && !replicas.in_bf16())
    throw std::logic_error("merge: sums only, from replicas that are not bf16 (the tree sums fp32 ones in place)");
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

void ReplicaBlocks::Select(size_t begin, size_t end) {
  begin_ = begin;
  end_ = end;
  if (!scratch_.empty()) return;  // bf16: StoreAll writes the replicas' bits, not the blocks
  for (size_t i = 0; i < replicas_.count(); ++i) blocks_[i] = replicas_.members[i].params + begin;
}

void ReplicaBlocks::Store() {
  if (scratch_.empty() || replicas_.sums_only) return;
  for (size_t i = 0; i < replicas_.count(); ++i)
    kernels::cpu::vector_ops::RoundBf16(blocks_[i], replicas_.members[i].bf16 + begin_, end_ - begin_,
                                        replicas_.bf16_rounding_key, begin_);
}

void ReplicaBlocks::StoreAll(const float* values) {
  if (replicas_.sums_only) return;
  const size_t n = replicas_.count(), m = end_ - begin_;
  if (scratch_.empty()) {
    for (size_t i = 0; i < n; ++i)
      if (blocks_[i] != values) std::memcpy(blocks_[i], values, m * sizeof(float));
    return;
  }
  uint16_t* first = replicas_.members[0].bf16 + begin_;
  kernels::cpu::vector_ops::NearestBf16s(values, first, m);
  for (size_t i = 1; i < n; ++i) std::memcpy(replicas_.members[i].bf16 + begin_, first, m * sizeof(uint16_t));
}

const float* RoundedStart(const float* w, const float* wp, float gamma, bool nesterov, size_t m, float* scratch,
                          float* rounded) {
  const float* start = w;
  if (nesterov) {
#pragma omp simd
    for (size_t j = 0; j < m; ++j) scratch[j] = w[j] + gamma * (w[j] - wp[j]);
    start = scratch;
  }
  uint16_t bits[kRoundedStartPiece];
  kernels::cpu::vector_ops::NearestBf16s(start, bits, m);
  kernels::cpu::vector_ops::WidenBf16s(bits, rounded, m);
  return start;
}

double DeterministicSquaredNorm(const base::ReplicaParams& x, size_t begin, size_t end) {
  if (begin == end) return 0.0;
  // The simple_partitioner split of a fixed range is fixed, and so is the combination order of
  // parallel_deterministic_reduce.
  return tbb::parallel_deterministic_reduce(
      tbb::blocked_range<size_t>(begin, end, kNormGrain), 0.0,
      [&x](const tbb::blocked_range<size_t>& r, double acc) {
        return acc + (x.in_bf16() ? SumOfSquares(x.bf16 + r.begin(), r.size()) : SumOfSquares(x.params + r.begin(), r.size()));
      },
      [](double a, double b) { return a + b; }, tbb::simple_partitioner());
}

}  // namespace xmlt::merge
