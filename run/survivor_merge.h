// The merge over the devices still alive: the replicas, their batch sizes, learning rates and
// update counts into the global model. Rebuilt when a device drops (the collective and the weights
// are sized by the replica count). When every device is a GPU (MergesOnGpus), the merge runs on
// the GPUs, on the replicas where they are, and keeps the global model there (merge/gpu/);
// otherwise on the host, through the devices' mirrors.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "kernels/model.h"
#include "merge/global_model.h"
#include "merge/merger.h"
#include "scheduler/device_pool.h"
#include "scheduler/train_options.h"

namespace xmlt::run {

class SurvivorMerge {
 public:
  SurvivorMerge(const scheduler::SchedulerOptions& scheduling, const kernels::Model<float>& model);

  // Merges the alive devices' replicas into `global`, `part` holding their updates; returns alpha_i
  // per device (0 if dropped). Replicas that keep their weights in bf16 are merged where they are
  // (merge/replica_set.h); the elastic force rounds them stochastically with the noise of
  // `bf16_rounding_key`, which the caller draws anew for each merge, the same in a resumed run.
  merge::MergeOutcome Run(scheduler::DevicePool& pool, const scheduler::MegaBatchRun& part, merge::GlobalModel* global,
                          uint32_t bf16_rounding_key = 0);

  // How many times a lost GPU cut a merge or took its share of the global model with it, so that
  // the run went on from the host's copy of w and w_p (made after the last mega-batch). A GPU lost
  // in a merge is dropped, as one lost in training is; across ranks the run stops instead.
  uint64_t global_models_lost() const { return global_models_lost_; }

 private:
  merge::MergeOutcome RunOnce(scheduler::DevicePool& pool, const scheduler::MegaBatchRun& part,
                              merge::GlobalModel* global, uint32_t bf16_rounding_key);
  bool DropLostDevices(scheduler::DevicePool& pool);
  merge::MergeOutcome GoOnFromTheHostCopy(scheduler::DevicePool& pool, merge::GlobalModel* global);
  // The copy merge of a replica that keeps no fp32 parameters (bf16 weights): w read from its stream.
  merge::MergeOutcome CopyStreamed(engine::Device& device, merge::GlobalModel* global);
  merge::MergeOutcome RunOnGpus(scheduler::DevicePool& pool, const scheduler::MegaBatchRun& part,
                                const std::vector<size_t>& alive, merge::ReplicaSet& replicas,
                                merge::GlobalModel* global);
  static merge::MergeOutcome PerDevice(const scheduler::DevicePool& pool, const std::vector<size_t>& alive,
                                       merge::MergeOutcome outcome);

  const scheduler::SchedulerOptions& scheduling_;
  std::vector<size_t> tensors_;
  std::vector<size_t> devices_;
  std::unique_ptr<merge::Merger> merger_;
  const bool on_gpus_;
  uint64_t global_models_lost_ = 0;
};

}  // namespace xmlt::run
