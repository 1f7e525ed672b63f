// CPU replica; see cpu_replica.h.
#include "engine/cpu_replica.h"

#include <algorithm>
#include <stdexcept>

namespace xmlt::engine {

CpuReplica::CpuReplica(kernels::Model<float> model, uint32_t max_batch_rows, float momentum)
    : model_(std::move(model)), momentum_(momentum), workspace_(model_.shape, max_batch_rows) {
  // Written so that NaN fails too.
  if (!(momentum_ >= 0 && momentum_ < 1)) throw std::invalid_argument("momentum must be in [0, 1)");
  if (momentum_ > 0) velocity_ = kernels::ZeroModel<float>(model_.shape);
}

kernels::cpu::LossResult CpuReplica::TrainBatch(const data::Dataset& dataset, const uint64_t* rows,
                                                size_t count, float lr) {
  data::GatherBatch(dataset, rows, count, &batch_);
  kernels::cpu::StepRule<float> rule;
  rule.lr = lr;
  rule.momentum = momentum_;
  rule.velocity = momentum_ > 0 ? &velocity_ : nullptr;
  return kernels::cpu::TrainStep(&model_, batch_, rule, &workspace_);
}

void CpuReplica::RestoreVelocity(const std::vector<float>& velocity) {
  if (momentum_ == 0) {
    if (!velocity.empty()) throw std::invalid_argument("momentum state given to a replica without momentum");
    return;
  }
  if (velocity.empty()) {
    std::fill(velocity_.params.begin(), velocity_.params.end(), 0.0f);
  } else if (velocity.size() == velocity_.params.size()) {
    std::copy(velocity.begin(), velocity.end(), velocity_.params.begin());
  } else {
    throw std::invalid_argument("momentum state has " + std::to_string(velocity.size()) + " values for " +
                                std::to_string(velocity_.params.size()) + " parameters");
  }
}

}  // namespace xmlt::engine
