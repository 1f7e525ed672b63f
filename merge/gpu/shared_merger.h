// What the merges that keep w and w_p on the GPUs share. Such a merge hands the global model a
// shared pointer to itself (GlobalModel::KeptOnGpus), so that w and w_p outlive the merger the run
// replaces when a device drops, until they are fetched; merger factories return unique pointers,
// so SharedMerger owns the shared one.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <utility>

#include "merge/global_model.h"
#include "merge/merger.h"
#include "merge/replica_set.h"

namespace xmlt::merge::gpu {

// What every merge that keeps w and w_p on the GPUs does around its work: w and w_p go up when the
// host's are newer than `holder`'s (at the start, after a resume or a rollback, or after another
// merger held them), `merge` runs, and the global model is marked newest on the GPUs, in `holder`.
inline void MergeKeepingGlobalOnGpus(GlobalModel* global, const std::shared_ptr<GlobalModelOnGpus>& holder,
                                     const std::function<void(const float* current, const float* previous)>& upload,
                                     const std::function<void()>& merge) {
  if (global->gpu_holder() != holder.get()) upload(global->current().data(), global->previous().data());
  merge();
  global->KeptOnGpus(holder);
}

template <class GpuMerger>
class SharedMerger final : public Merger {
 public:
  explicit SharedMerger(std::shared_ptr<GpuMerger> merger) : merger_(std::move(merger)) {}
  MergeOutcome Merge(const ReplicaSet& replicas, const MergeInput& input, GlobalModel* global) override {
    return merger_->Merge(replicas, input, global);
  }
  std::string name() const override { return merger_->name(); }

 private:
  std::shared_ptr<GpuMerger> merger_;
};

}  // namespace xmlt::merge::gpu
