// A merge that keeps w and w_p on the GPUs hands the global model a shared pointer to itself
// (GlobalModel::on_gpus), so that they outlive the merger the run replaces when a device drops
// until they are fetched. Merger factories return unique pointers: this wrapper owns the shared one.
#pragma once

#include <memory>
#include <string>
#include <utility>

#include "merge/merger.h"

namespace xmlt::merge {

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

}  // namespace xmlt::merge
