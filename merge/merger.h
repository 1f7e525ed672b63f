// Merge strategies: how replicas become the next global model at the end of a mega-batch.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "merge/collective.h"
#include "merge/global_model.h"
#include "merge/replica_set.h"

namespace xmlt::merge {

// What the scheduler knows about each device's last mega-batch.
struct MergeInput {
  std::vector<double> batch;      // b_i (current batch size, possibly fractional: Algorithm 1 state)
  std::vector<double> lr;         // lr_i
  std::vector<uint64_t> updates;  // u_i: local steps since the last merge
};

struct MergeOutcome {
  std::vector<double> weights;  // alpha_i as applied (after perturbation)
  bool perturbed = false;
  int most_updated = -1, least_updated = -1;  // r and s when perturbed
};

struct MergeOptions {
  double momentum = 0.9;      // gamma of the global update
  MomentumMode momentum_mode = MomentumMode::kHeavy;
  double pert_threshold = 0.1;  // pert_thr: perturb when every ||w_i||_2 / #params is below it
  double pert_delta = 0.1;      // delta
  bool renormalize_perturbed = true;  // scale perturbed weights back to sum 1 (the paper does not)
  double elastic_alpha = 0;     // EASGD / CROSSBOW pull strength; 0 for CROSSBOW means 1 / n
};

class Merger {
 public:
  virtual ~Merger() = default;
  // Combines the replicas into w (global->current(), keeping w_p for momentum) and sets
  // every replica's starting point for the next round: the new global model (or its look-ahead
  // under kNesterov) for averaging merges; for elastic-force merges each replica keeps its own
  // state, pulled toward the center.
  virtual MergeOutcome Merge(const ReplicaSet& replicas, const MergeInput& input,
                             GlobalModel* global) = 0;
  virtual std::string name() const = 0;
};

// Algorithm 2 of the Adaptive SGD paper (normalized weights, perturbation, global momentum).
//  - alpha_i = b_i / sum b when every u_i is equal, else u_i / sum u.
//  - When every replica took at least one step (u_s > 0) and every replica has
//    ||w_i||_2 / #params < pert_threshold (an empty model never does):
//    alpha_r *= 1 + delta, alpha_s *= 1 - delta; then, with renormalize_perturbed, every alpha_i
//    is divided by their sum. The paper keeps the denormalization on purpose (sum > 1, so each
//    merge scales the model up and hundreds of merges compound it); renormalize_perturbed = false
//    is that rule.
//  - Tie rule for r = argmax u and s = argmin u: order the replicas by (u_i, b_i, -i); r is the
//    greatest (largest u, then larger b, then lower index) and s the least (smallest u, then
//    smaller b, then higher index). So with equal u and b, r = 0 and s = n - 1; r == s only with
//    one replica, which is never perturbed (the norms are then not even computed).
//  - Needs batch and updates with one entry per replica (lr is unused: empty or one per
//    replica), b_i >= 0 with sum b > 0 when the u_i are equal; throws std::invalid_argument.
std::unique_ptr<Merger> MakeNormalizedMerger(const MergeOptions& options,
                                             std::shared_ptr<Collective> collective);
// One replica taken as the global model (--algo single): w_p <- w, w <- the replica, alpha = 1.
// Throws std::invalid_argument for any other number of replicas.
std::unique_ptr<Merger> MakeCopyMerger();
// Elastic SGD's plain average (alpha_i = 1/n) under the same global momentum rule; never perturbs.
// The input is not used (its vectors must be empty or have one entry per replica).
std::unique_ptr<Merger> MakeAverageMerger(const MergeOptions& options,
                                          std::shared_ptr<Collective> collective);

// Adasum (Maleki et al.): each replica's change since the round began, d_i = w_i - start, per
// tensor, combined by the pairwise operator
//   Adasum(a, b) = (1 - a.b / (2 |a|^2)) a + (1 - a.b / (2 |b|^2)) b
// in a binary tree over adjacent devices; dot products and norms in double; a norm below
// sqrt(DBL_MIN) leaves its coefficient at 1. w' = start + Adasum(d_1..d_n), plus gamma (w - w_p)
// under kHeavy. start is w under kHeavy and the look-ahead w + gamma (w - w_p) under kNesterov
// (recomputed from w and w_p, never stored); every replica then goes to the next start.
// Device counts that are not a power of two (Horovod refuses them): with n = 2^k + m, the m
// adjacent pairs (0,1), (2,3), ..., (2m-2, 2m-1) are folded first, then the remaining 2^k operands
// form the power-of-two tree, e.g. n=5: ((d0+d1)+d2)+(d3+d4), n=6: ((d0+d1)+(d2+d3))+(d4+d5),
// n=7: ((d0+d1)+(d2+d3))+((d4+d5)+d6). Every device sits at depth k or k+1 (a carried odd device
// would instead weigh up to half of the result) and operands stay adjacent (PairwiseTreeLevels in
// merge/adasum.h, shared with the tree collective). Combines in the replicas' own buffers; the
// outcome's weights are 1 per replica and it is never perturbed.
std::unique_ptr<Merger> MakeAdasumMerger(const MergeOptions& options);

// Elastic force (EASGD, and CROSSBOW's synchronous model averaging): with c_j = a (z_j - x),
//   z_j <- z_j - c_j for every replica (each keeps its own state), and
//   x <- x + sum_j c_j + gamma (x - x_prev)   (gamma = options.momentum; EASGD uses 0).
// a = options.elastic_alpha, or 1 / n when that is 0. The pull uses each replica after its local
// steps (CROSSBOW computes c_j before the step it takes in the same iteration; equal to first
// order in the learning rate).
std::unique_ptr<Merger> MakeElasticForceMerger(const MergeOptions& options,
                                               std::shared_ptr<Collective> collective);

// Synchronous gradient aggregation: every replica took exactly one plain SGD step from the same
// model w with the same learning rate, so the average of the replicas is w - lr * mean(g_i), the
// averaged gradient applied once; the global momentum is applied on top as in kHeavy.
std::unique_ptr<Merger> MakeGradientMerger(const MergeOptions& options,
                                           std::shared_ptr<Collective> collective);

}  // namespace xmlt::merge
