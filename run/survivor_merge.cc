// The merge over the devices still alive; see survivor_merge.h.
#include "run/survivor_merge.h"

#include <stdexcept>

#include "merge/rank_sum_collective.h"
#include "run/replica_exchange.h"

namespace xmlt::scheduler {
namespace {

// The merge over `devices` alive devices; `is_local` (one per alive device) is given across ranks.
std::unique_ptr<merge::Merger> MakeMerger(const EngineOptions& engine, size_t devices,
                                          const std::vector<bool>& is_local) {
  merge::MergeOptions options;
  options.momentum = engine.momentum;
  options.momentum_mode = engine.nesterov ? merge::MomentumMode::kNesterov : merge::MomentumMode::kHeavy;
  options.pert_threshold = engine.pert_threshold;
  options.pert_delta = engine.pert_delta;
  options.renormalize_perturbed = engine.pert_renormalize;
  options.elastic_alpha = engine.elastic_alpha;
  std::shared_ptr<merge::Collective> collective = merge::MakeCollective(engine.collective, devices);
  if (!is_local.empty() && MergesByWeightedSum(engine)) {
    // The rank's own collective keeps the one-process partitioning: norms are the same bits.
    collective = merge::MakeRankSumCollective(merge::MakeCollective(engine.collective, devices),
                                              *engine.ranks, is_local);
  }
  using Merge = EngineOptions::Merge;
  switch (engine.merge) {
    case Merge::kNormalized: return merge::MakeNormalizedMerger(options, collective);
    case Merge::kAverage:
      return engine.elastic_alpha > 0 ? merge::MakeElasticForceMerger(options, collective)
                                      : merge::MakeAverageMerger(options, collective);
    case Merge::kAdasum: return merge::MakeAdasumMerger(options);
    case Merge::kCrossbow: return merge::MakeElasticForceMerger(options, collective);
    case Merge::kGradient: return merge::MakeGradientMerger(options, collective);
    case Merge::kCopy: return merge::MakeCopyMerger();
  }
  throw std::logic_error("unknown merge");
}

}  // namespace

SurvivorMerge::SurvivorMerge(const EngineOptions& engine, const kernels::Model<float>& model) : engine_(engine) {
  for (const kernels::LayerView& layer : model.layers) {
    tensors_.push_back(layer.weight.offset);
    tensors_.push_back(layer.bias.offset);
  }
}

merge::MergeOutcome SurvivorMerge::Run(DevicePool& pool, const MegaBatchRun& part, merge::GlobalModel* global) {
  const std::vector<size_t> alive = pool.alive();
  const bool across_ranks = engine_.ranks != nullptr && engine_.ranks->size() > 1;
  if (alive != devices_) {
    devices_ = alive;
    std::vector<bool> is_local;
    if (across_ranks)
      for (size_t i : alive) is_local.push_back(pool.local(i));
    merger_ = MakeMerger(engine_, alive.size(), is_local);
  }
  merge::ReplicaSet replicas;
  replicas.size = global->current.size();
  replicas.tensors = tensors_;
  merge::MergeInput input;
  // A hierarchical merge reads this rank's replicas only: the others' mirrors are not even made.
  const bool local_only = across_ranks && MergesByWeightedSum(engine_);
  for (size_t i : alive) {
    replicas.params.push_back(local_only && !pool.local(i) ? nullptr : pool.device(i).HostParams());
    input.batch.push_back(pool.states()[i].batch);
    input.lr.push_back(pool.states()[i].lr);
    input.updates.push_back(part.updates[i]);
  }
  for (size_t i : alive) pool.device(i).PrepareMerge();
  // Across ranks a weighted sum is hierarchical (the rank sum collective reads local replicas
  // only); the other merges read every replica on every rank, so the mirrors of the other ranks'
  // devices are filled first. Either way every rank ends with the same bits.
  if (across_ranks && !MergesByWeightedSum(engine_)) ShareReplicas(pool);
  merge::MergeOutcome outcome = merger_->Merge(replicas, input, global);
  for (size_t i : alive) pool.device(i).FinishMerge();
  std::vector<double> weights(pool.size(), 0.0);
  for (size_t k = 0; k < alive.size(); ++k) weights[alive[k]] = outcome.weights[k];
  outcome.weights = weights;
  return outcome;
}

}  // namespace xmlt::scheduler
