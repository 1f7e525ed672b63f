// The merge over the devices still alive; see survivor_merge.h.
#include "run/survivor_merge.h"

#include <algorithm>
#include <stdexcept>
#include <string>

#include "base/replica_params.h"
#include "ranks/rank_group.h"
#include "run/merge_factory.h"
#include "run/replica_exchange.h"
#include "scheduler/result_tally.h"

namespace xmlt::run {
namespace {

bool AcrossRanks(const scheduler::DevicePool& pool) { return pool.ranks() != nullptr && pool.ranks()->size() > 1; }

}  // namespace

SurvivorMerge::SurvivorMerge(const scheduler::SchedulerOptions& scheduling, const kernels::Model<float>& model)
    : scheduling_(scheduling), on_gpus_(scheduler::MergesOnGpus(scheduling)) {
  for (const kernels::LayerView& layer : model.layers) {
    tensors_.push_back(layer.weight.offset);
    tensors_.push_back(layer.bias.offset);
  }
}

merge::MergeOutcome SurvivorMerge::Run(scheduler::DevicePool& pool, const scheduler::MegaBatchRun& part,
                                       merge::GlobalModel* global, uint32_t bf16_rounding_key) {
  const bool across_ranks = AcrossRanks(pool);
  try {
    return RunOnce(pool, part, global, bf16_rounding_key);
  } catch (const std::exception&) {
    // A GPU lost in the middle of a merge (a lost context, or NCCL's report of it): across ranks
    // the others are mid-collective, so the run stops (and resumes from its checkpoint); here the
    // survivors go on. Any other failure stops the run.
    if (across_ranks || !DropLostDevices(pool)) throw;
    return GoOnFromTheHostCopy(pool, global);
  }
}

bool SurvivorMerge::DropLostDevices(scheduler::DevicePool& pool) {
  bool found = false;
  for (size_t i : pool.alive()) {
    if (!pool.device(i).Lost()) continue;
    pool.Drop(i, "its GPU context was lost during a merge");
    scheduler::DropContextSharers(pool, i);
    found = true;
  }
  return found;
}

merge::MergeOutcome SurvivorMerge::GoOnFromTheHostCopy(scheduler::DevicePool& pool, merge::GlobalModel* global) {
  // The merge was cut: the replicas, and on the GPUs w and w_p, are half merged. The host's copy of
  // w and w_p is whole (a host merge writes it only after every mirror was read; a merge on the
  // GPUs leaves the copy made after the last mega-batch), so every survivor restarts from it.
  ++global_models_lost_;
  global->FallBackToHostCopy();
  devices_.clear();
  merger_.reset();
  for (size_t i : pool.alive()) {
    engine::Device& d = pool.device(i);
    d.LoadParams(global->current().data(), global->current().size());
    d.FinishMerge();
  }
  merge::MergeOutcome outcome;
  outcome.weights.assign(pool.size(), 0.0);
  return outcome;
}

merge::MergeOutcome SurvivorMerge::RunOnce(scheduler::DevicePool& pool, const scheduler::MegaBatchRun& part,
                                           merge::GlobalModel* global, uint32_t bf16_rounding_key) {
  const std::vector<size_t> alive = pool.alive();
  const bool across_ranks = AcrossRanks(pool);
  merge::ReplicaSet replicas;
  replicas.size = global->size();
  replicas.tensors = tensors_;
  if (on_gpus_) return RunOnGpus(pool, part, alive, replicas, global);
  if (alive != devices_) {
    devices_ = alive;
    std::vector<bool> is_local;
    if (across_ranks)
      for (size_t i : alive) is_local.push_back(pool.local(i));
    merger_ = CreateMerger(scheduling_, {MergePlace::kHost, alive.size(), is_local, nullptr, {}, pool.ranks()});
  }
  merge::MergeInput input;
  // A hierarchical merge reads this rank's replicas only: the others' mirrors are not even made.
  const bool local_only = across_ranks && scheduler::MergesByWeightedSum(scheduling_);
  // The copy merge reads a bf16 replica as a stream: it has no fp32 parameters to copy.
  if (scheduling_.merge == scheduler::SchedulerOptions::Merge::kCopy && alive.size() == 1 &&
      pool.device(alive[0]).KeepsBf16Weights())
    return PerDevice(pool, alive, CopyStreamed(pool.device(alive[0]), global));
  // Every GPU's copy to its mirror is queued before the first is waited for (in HostParams).
  for (size_t i : alive) pool.device(i).PrepareMerge();
  replicas.bf16_rounding_key = bf16_rounding_key;
  for (size_t i : alive) {
    engine::Device& d = pool.device(i);
    // A replica with bf16 weights is merged where it is, in bf16 (merge/replica_blocks.h); another
    // rank's is a bf16 mirror, or null where the merge reads this rank's replicas only.
    replicas.weights_in_bf16 = replicas.weights_in_bf16 || d.KeepsBf16Weights();
    if (local_only && !pool.local(i))
      replicas.members.push_back({});
    else if (d.KeepsBf16Weights())
      replicas.members.push_back({nullptr, -1, d.HostBf16Params()});
    else
      replicas.members.push_back({d.HostParams()});
    input.batch.push_back(pool.states()[i].batch);
    input.lr.push_back(pool.states()[i].lr);
    input.updates.push_back(part.updates[i]);
  }
  // Across ranks a weighted sum is hierarchical (the rank sum collective reads local replicas
  // only); the other merges read every replica on every rank, so the mirrors of the other ranks'
  // devices are filled first. Either way every rank ends with the same bits.
  if (across_ranks && !scheduler::MergesByWeightedSum(scheduling_)) ShareReplicas(pool);
  merge::MergeOutcome outcome = merger_->Merge(replicas, input, global);
  for (size_t i : alive) pool.device(i).FinishMerge();
  return PerDevice(pool, alive, std::move(outcome));
}

merge::MergeOutcome SurvivorMerge::CopyStreamed(engine::Device& device, merge::GlobalModel* global) {
  // The copy merge's w_p <- w where it is kept, then w <- the replica, read a piece at a time.
  std::vector<float>& w = global->MutableCurrent();
  if (global->previous_size() != 0) global->MutablePrevious().swap(w);
  // A GPU's bf16 mirror takes its replica first (a CPU's replica is its own): a checkpoint or
  // rollback after this merge reads the mirror too. The merge writes nothing back.
  device.PrepareMerge();
  size_t at = 0;
  device.StreamParams([&](const float* params, size_t count) {
    if (count > w.size() - at) throw std::logic_error("device " + device.spec().id + " streamed too many parameters");
    std::copy(params, params + count, w.begin() + at);
    at += count;
  });
  if (at != w.size()) throw std::logic_error("device " + device.spec().id + " streamed the wrong number of parameters");
  merge::MergeOutcome outcome;
  outcome.weights = {1.0};
  return outcome;
}

merge::MergeOutcome SurvivorMerge::RunOnGpus(scheduler::DevicePool& pool, const scheduler::MegaBatchRun& part,
                                             const std::vector<size_t>& alive, merge::ReplicaSet& replicas,
                                             merge::GlobalModel* global) {
  const bool across_ranks = AcrossRanks(pool);
  merge::MergeInput input;
  std::vector<int> owners;  // across ranks: each replica's rank
  for (size_t i : alive) {
    if (across_ranks) owners.push_back(scheduling_.device_rank.at(i));
    if (!pool.local(i)) {
      // Another rank's replica: its GPU places it in NCCL's ranks; its bytes are never read here.
      replicas.members.push_back({nullptr, pool.device(i).spec().ordinal});
    } else {
      const base::ReplicaParams at = pool.device(i).ParamsOnGpu();
      if (!at.on_gpu()) throw std::logic_error("merge on GPUs: device " + pool.device(i).spec().id + " is not a GPU");
      replicas.members.push_back(at);
    }
    input.batch.push_back(pool.states()[i].batch);
    input.lr.push_back(pool.states()[i].lr);
    input.updates.push_back(part.updates[i]);
  }
  if (alive != devices_) {
    // Every rank sees the same alive devices (the drops are shared with the batch results), so
    // every rank stops here together, before any collective that a lost GPU would never join.
    if (across_ranks && !devices_.empty()) {
      std::string lost;
      for (size_t i : devices_)
        if (pool.dropped(i)) lost += (lost.empty() ? "" : ", ") + pool.device(i).spec().id + " (" + pool.fault(i) + ")";
      throw std::runtime_error("a GPU of the run dropped out: " + lost +
                               "; a run across ranks that merges through NCCL stops (the communicator spans every "
                               "rank's GPUs): resume it from its checkpoint on the GPUs that remain");
    }
    for (int rank = 0; across_ranks && rank < pool.ranks()->size(); ++rank)
      if (std::find(owners.begin(), owners.end(), rank) == owners.end())
        throw std::runtime_error("rank " + std::to_string(rank) +
                                 " has no GPU left to merge on: a run across ranks stops here (resume it from its "
                                 "checkpoint on the GPUs that remain)");
    devices_ = alive;
    // The old merger's GPUs held w and w_p; a lost GPU took its share with it, and the host's copy
    // (the rollback target's, taken after the last sound mega-batch) stands in.
    if (!global->TakeBackFromGpus()) ++global_models_lost_;
    merger_.reset();  // its buffers go before the new ones are allocated
    merger_ = CreateMerger(scheduling_, {MergePlace::kGpus, 0, {}, &replicas, owners, pool.ranks()});
  }
  return PerDevice(pool, alive, merger_->Merge(replicas, input, global));
}

merge::MergeOutcome SurvivorMerge::PerDevice(const scheduler::DevicePool& pool, const std::vector<size_t>& alive,
                                            merge::MergeOutcome outcome) {
  std::vector<double> weights(pool.size(), 0.0);
  for (size_t k = 0; k < alive.size(); ++k) weights[alive[k]] = outcome.weights[k];
  outcome.weights = weights;
  return outcome;
}

}  // namespace xmlt::run
