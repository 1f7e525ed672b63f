// The Adasum operator (Maleki et al.) as an in-place all-reduce over the replicas' own buffers;
// the pairwise tree over adjacent devices that it and the tree collective share; and what the
// GPUs' Adasum (merge/gpu/device_adasum.h) takes from it: the tree as a reduce-scatter schedule
// and the coefficients, so that both merges combine the same pairs with the same arithmetic.
#pragma once

#include <cfloat>
#include <cstddef>
#include <functional>
#include <vector>

// Callable from CUDA kernels too (the simulated GPUs compile them as host code).
#if defined(__CUDACC__)
#define XMLT_ADASUM_FN __host__ __device__ inline
#else
#define XMLT_ADASUM_FN inline
#endif

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

// The coefficient of `a` in Adasum(a, b) below, from a.b and |a|^2 (that of b: from a.b and |b|^2);
// a (numerically) zero operand keeps its own scale, 1.
XMLT_ADASUM_FN double AdasumCoefficient(double ab, double aa) { return aa >= DBL_MIN ? 1.0 - ab / (2.0 * aa) : 1.0; }

// One replica's share of one level of the reduce-scatter: it combines the level's left operand a
// and right operand b on [begin, end) of the model into its own values there, its own values being
// a (left) or b (right) and the partner's brought over. The dots are summed over `group`, the
// replicas that hold the rest of the same two operands.
struct AdasumStep {
  size_t replica, partner;
  bool left;
  size_t begin, end;
  std::vector<size_t> group;            // ascending operand order, the replica itself included
  size_t sent_begin = 0, sent_end = 0;  // the part that the next level's partner pulls
};
// A piece of the final result and the replica that holds it.
struct AdasumSlice {
  size_t replica, begin, end;
};
struct AdasumSchedule {
  std::vector<std::vector<AdasumStep>> levels;
  std::vector<AdasumSlice> slices;  // the reduce-scatter's result, in operand order
};

// PairwiseTreeLevels(n) as a reduce-scatter over [0, count), read off that tree. With n = 2^k + m,
// the tree's first level folds (2i, 2i + 1), i < m: these pairs are combined whole, replica
// 2i + 1's values brought to replica 2i, which combines all of them (the folded right operand then
// sits out, as in the tree). The tree's next level pairs the 2^k operands left, (o_0, o_1),
// (o_2, o_3), ..., each o_j held by one replica; from there on vector halving, distance doubling:
// at level l (d = 2^l) the holders of o_j and o_(j XOR d) hold the same range [lo, hi) of their two
// operands; the one with (j / d) even holds the left operand a, keeps [lo, mid) and combines a and
// b there, the other keeps [mid, hi), mid = lo + (hi - lo) / 2. The pair's dots are the sums over
// the 2d holders of o_j0 .. o_(j0 + 2d - 1) (j0: j rounded down to a multiple of 2d), which hold the
// disjoint ranges of both operands: level l is the tree's pairs (o_j0, o_(j0 + d)), combined over
// whole tensors as AdasumAllReduce does. After k levels each holder has the final result on its own
// range. std::logic_error if the tree ever stops matching this.
AdasumSchedule AdasumReduceScatter(size_t n, size_t count);

// Rewrites replica i's block [begin, end) in place before the reduction first reads it (the
// merger turns parameters into deltas here). Called once per replica and block.
using PrepareBlock = std::function<void(size_t replica, size_t begin, size_t end, float* values)>;

// Adasum all-reduce, per tensor of `vectors.tensors` (empty: one tensor), over the tree above:
//   Adasum(a, b) = (1 - a.b / (2 |a|^2)) a + (1 - a.b / (2 |b|^2)) b,
// a.b, |a|^2, |b|^2 accumulated in double over the whole tensor before the tensor is combined; a
// squared norm below DBL_MIN leaves its coefficient at 1 (so a zero operand returns the other).
// The left operand's buffer receives each result: no model-sized memory is allocated. Then, block
// by block, finish (may be empty) rewrites the result and it is written into every vector.
// Vectors in bf16 (ReplicaSet::in_bf16) are not written until then: each pass reads them widened
// and combines the levels before it again, so the result is the fp32 one of the widened values,
// written into every vector rounded to nearest (merge/replica_blocks.h: StoreAll).
// `prepare` (may be empty) runs first on every block of every vector. Chunk boundaries and
// summation orders are fixed: the same bits whatever the thread count. Throws
// std::invalid_argument on no vectors, null parameters or tensor offsets that are not ascending
// from 0 within the size (a replica is left untouched then).
void AdasumAllReduce(const ReplicaSet& vectors, const PrepareBlock& prepare,
                     const FinishBlock& finish);

}  // namespace xmlt::merge
