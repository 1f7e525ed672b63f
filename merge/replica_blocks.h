// A block of every host replica as fp32 values, for the CPU collectives and merges: the replicas'
// own memory when they are fp32; widened from bf16 into scratch when they keep bf16 weights, and
// written back rounded (to nearest when every replica gets the same start, stochastically when
// each keeps a state of its own). So a merge's arithmetic is the same on both.
#pragma once

#include <cstddef>
#include <vector>

#include "merge/replica_set.h"

namespace xmlt::merge {

class ReplicaBlocks {
 public:
  // Blocks of at most `block` values; scratch (replicas x block floats) only for bf16 replicas.
  ReplicaBlocks(const ReplicaSet& replicas, size_t block);

  // [begin, end) of every replica as fp32, writable: block i is replica i's. Valid until the next
  // Load; a bf16 set's writes reach the replicas only through Store or StoreAll.
  float* const* Load(size_t begin, size_t end);
  // Makes [begin, end) the range StoreAll writes, without reading the replicas: for a caller that
  // computed the values elsewhere (the rank sum's total).
  void Select(size_t begin, size_t end);
  // Store and StoreAll write nothing for a set of sums_only (the rank sum's partial sums).
  // Writes the loaded blocks back, each replica its own values: nothing to do for fp32 replicas;
  // bf16 ones are rounded stochastically, each value with the noise of (bf16_rounding_key, its
  // offset): for the elastic force, whose replicas keep their own states.
  void Store();
  // Gives every replica's loaded block `values` (m floats; may be one of the blocks), the common
  // start of the next round: copied into fp32 replicas; rounded to nearest for bf16 ones, so that
  // the next merge can recompute that start from w and take the replicas' changes from it
  // (merge/global_momentum.h, the Adasum merger). w itself stays the unrounded fp32 value.
  void StoreAll(const float* values);

 private:
  const ReplicaSet& replicas_;
  size_t block_;
  size_t begin_ = 0, end_ = 0;
  std::vector<float> scratch_;
  std::vector<float*> blocks_;
};

// The start bf16 replicas began the round from, as StoreAll wrote it: w (kHeavy) or the look-ahead
// w + gamma (w - w_p) (kNesterov, the expression the look-ahead is written with), rounded to
// nearest and widened into `rounded`. Returns the unrounded start: w itself, or `scratch` under
// kNesterov. For m <= kRoundedStartPiece values: the weighted sums' finish and Adasum's deltas
// take the replicas' changes from it a piece at a time.
constexpr size_t kRoundedStartPiece = 1024;
const float* RoundedStart(const float* w, const float* wp, float gamma, bool nesterov, size_t m, float* scratch,
                          float* rounded);

// Sum of squares of replica x's values [begin, end) in double (bf16 values widened), over fixed
// leaves combined in a fixed tree, so the result has the same bits whatever the thread count.
double DeterministicSquaredNorm(const base::ReplicaParams& x, size_t begin, size_t end);

}  // namespace xmlt::merge
