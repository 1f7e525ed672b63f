// Merge strategies: how replicas become the next global model at the end of a mega-batch.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "merge/collective.h"
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
  double pert_threshold = 0.1;  // pert_thr: perturb when every ||w_i||_2 / #params is below it
  double pert_delta = 0.1;      // delta
};

class Merger {
 public:
  virtual ~Merger() = default;
  // Combines the replicas into global->current (keeping global->previous for momentum) and
  // leaves every replica equal to the new global model.
  virtual MergeOutcome Merge(const ReplicaSet& replicas, const MergeInput& input,
                             GlobalModel* global) = 0;
  virtual std::string name() const = 0;
};

// Algorithm 2 of the Adaptive SGD paper (normalized weights, perturbation, global momentum).
//  - alpha_i = b_i / sum b when every u_i is equal, else u_i / sum u.
//  - When every replica has ||w_i||_2 / #params < pert_threshold (an empty model never does):
//    alpha_r *= 1 + delta, alpha_s *= 1 - delta, and the weights are NOT renormalized (the paper
//    keeps the denormalization on purpose).
//  - Tie rule for r = argmax u and s = argmin u: order the replicas by (u_i, b_i, -i); r is the
//    greatest (largest u, then larger b, then lower index) and s the least (smallest u, then
//    smaller b, then higher index). So with equal u and b, r = 0 and s = n - 1; r == s only with
//    one replica, which is never perturbed (the norms are then not even computed).
//  - Needs batch and updates with one entry per replica (lr is unused: empty or one per
//    replica), b_i >= 0 with sum b > 0 when the u_i are equal; throws std::invalid_argument.
std::unique_ptr<Merger> MakeNormalizedMerger(const MergeOptions& options,
                                             std::shared_ptr<Collective> collective);
// Elastic SGD's plain average (alpha_i = 1/n) under the same global momentum rule; never perturbs.
// The input is not used (its vectors must be empty or have one entry per replica).
std::unique_ptr<Merger> MakeAverageMerger(const MergeOptions& options,
                                          std::shared_ptr<Collective> collective);

}  // namespace xmlt::merge
