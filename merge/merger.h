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
std::unique_ptr<Merger> MakeNormalizedMerger(const MergeOptions& options,
                                             std::shared_ptr<Collective> collective);
// Elastic SGD's plain average (alpha_i = 1/n) under the same global momentum rule.
std::unique_ptr<Merger> MakeAverageMerger(const MergeOptions& options,
                                          std::shared_ptr<Collective> collective);

}  // namespace xmlt::merge
