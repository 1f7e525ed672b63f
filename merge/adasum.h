// The Adasum operator (Maleki et al.) as an in-place all-reduce over the replicas' own buffers,
// and the pairwise tree over adjacent devices that it and the tree collective share.
#pragma once

#include <cstddef>
#include <functional>
#include <vector>

#include "merge/collective.h"
#include "merge/replica_set.h"

namespace xmlt::merge {

// One combination of the tree: operand `right` is combined into operand `left` (device indices).
struct TreePair {
  size_t left, right;
};

// The pairwise tree over n devices, level by level; the pairs of one level are independent.
// With n = 2^k + m (0 <= m < 2^k): when m > 0 a first level folds the m adjacent pairs
// (0,1), (2,3), ..., (2m-2, 2m-1), leaving 2^k operands (devices 0, 2, ..., 2m-2, then 2m..n-1);
// these are then combined as a power-of-two tree, ((o0+o1)+(o2+o3))+..., adjacent operands at
// every level. Every device sits at depth k or k+1 and the result always ends in device 0.
// Examples: n=3: (0+1)+2; n=5: ((0+1)+2)+(3+4); n=6: ((0+1)+(2+3))+(4+5);
//           n=7: ((0+1)+(2+3))+((4+5)+6).
std::vector<std::vector<TreePair>> PairwiseTreeLevels(size_t n);

// Rewrites replica i's block [begin, end) in place before the reduction first reads it (the
// merger turns parameters into deltas here). Called once per replica and block.
using PrepareBlock = std::function<void(size_t replica, size_t begin, size_t end, float* values)>;

// Adasum all-reduce, per tensor of `vectors.tensors` (empty: one tensor), over the tree above:
//   Adasum(a, b) = (1 - a.b / (2 |a|^2)) a + (1 - a.b / (2 |b|^2)) b,
// a.b, |a|^2, |b|^2 accumulated in double over the whole tensor before the tensor is combined; a
// squared norm below DBL_MIN leaves its coefficient at 1 (so a zero operand returns the other).
// The left operand's buffer receives each result: no model-sized memory is allocated. Then, block
// by block, finish (may be empty) rewrites the result and it is written into every vector.
// `prepare` (may be empty) runs first on every block of every vector. Chunk boundaries and
// summation orders are fixed: the same bits whatever the thread count. Throws
// std::invalid_argument on no vectors, null parameters or tensor offsets that are not ascending
// from 0 within the size (a replica is left untouched then).
void AdasumAllReduce(const ReplicaSet& vectors, const PrepareBlock& prepare,
                     const FinishBlock& finish);

}  // namespace xmlt::merge
