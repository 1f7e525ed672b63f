// CPU replica; see cpu_replica.h.
#include "engine/cpu_replica.h"

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

}  // namespace xmlt::engine
