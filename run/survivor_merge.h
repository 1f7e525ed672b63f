// The merge over the devices still alive: the replicas, their batch sizes, learning rates and
// update counts into the global model. Rebuilt when a device drops (the collective and the weights
// are sized by the replica count).
#pragma once

#include <memory>
#include <vector>

#include "kernels/model.h"
#include "merge/merger.h"
#include "scheduler/device_pool.h"
#include "scheduler/train_options.h"

namespace xmlt::scheduler {

class SurvivorMerge {
 public:
  SurvivorMerge(const EngineOptions& engine, const kernels::Model<float>& model);

  // Merges the alive devices' replicas into `global`, `part` holding their updates; returns alpha_i
  // per device (0 if dropped).
  merge::MergeOutcome Run(DevicePool& pool, const MegaBatchRun& part, merge::GlobalModel* global);

 private:
  const EngineOptions& engine_;
  std::vector<size_t> tensors_;
  std::vector<size_t> devices_;
  std::unique_ptr<merge::Merger> merger_;
};

}  // namespace xmlt::scheduler
