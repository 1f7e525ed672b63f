// CPU replica; see cpu_replica.h.
#include "engine/cpu_replica.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <string>

namespace xmlt::engine {
namespace {

// SplitMix64's finalizer, to turn (seed, stream, step) into a dropout key.
uint64_t Mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

}  // namespace

CpuReplica::CpuReplica(kernels::Model<float> model, uint32_t max_batch_rows, float momentum,
                       kernels::OutputMath math, StepRegularization regularization)
    : model_(std::move(model)),
      momentum_(momentum),
      regularization_(regularization),
      workspace_(model_.shape, max_batch_rows, math) {
  // Written so that NaN fails too.
  if (!(momentum_ >= 0 && momentum_ < 1)) throw std::invalid_argument("momentum must be in [0, 1)");
  if (!(regularization_.weight_decay >= 0) || !std::isfinite(regularization_.weight_decay))
    throw std::invalid_argument("weight decay must be a finite number >= 0");
  if (!(regularization_.dropout >= 0 && regularization_.dropout < 1))
    throw std::invalid_argument("dropout must be in [0, 1)");
  if (!(regularization_.input_adagrad_ratio >= 0) || !std::isfinite(regularization_.input_adagrad_ratio))
    throw std::invalid_argument("the first layer's Adagrad rate must be a finite number >= 0");
  // The first layer's Adagrad keeps its squares where that layer's velocity would be.
  if (momentum_ > 0 || regularization_.input_adagrad_ratio > 0) velocity_ = kernels::ZeroModel<float>(model_.shape);
}

kernels::cpu::LossResult CpuReplica::TrainBatch(const data::Dataset& dataset, const uint64_t* rows,
                                                size_t count, float lr) {
  // Refused before gathering: the buffers were sized for max_rows.
  if (count > workspace_.max_rows)
    throw std::invalid_argument("batch of " + std::to_string(count) + " rows for a replica sized for " +
                                std::to_string(workspace_.max_rows));
  data::GatherBatch(dataset, rows, count, &batch_);
  // The kernels index the batch's entries with 32 bits (sparse_mlp.h: by_feature, entry_row).
  if (batch_.feature_idx.size() > std::numeric_limits<uint32_t>::max())
    throw std::invalid_argument("batch has " + std::to_string(batch_.feature_idx.size()) +
                                " feature entries; at most 2^32-1 are supported");
  kernels::cpu::StepRule<float> rule;
  rule.lr = lr;
  rule.momentum = momentum_;
  rule.velocity = velocity_.params.empty() ? nullptr : &velocity_;
  rule.input_adagrad = regularization_.input_adagrad_ratio > 0;
  rule.input_lr = lr * regularization_.input_adagrad_ratio;
  rule.weight_decay = regularization_.weight_decay;
  rule.dropout = regularization_.dropout;
  rule.dropout_key = Mix(Mix(Mix(regularization_.seed) ^ regularization_.stream) ^ steps_);
  const kernels::cpu::LossResult loss = kernels::cpu::TrainStep(&model_, batch_, rule, &workspace_);
  ++steps_;
  return loss;
}

std::vector<uint8_t> CpuReplica::SaveStepCount() const {
  if (regularization_.dropout == 0) return {};
  std::vector<uint8_t> state(sizeof steps_);
  std::memcpy(state.data(), &steps_, sizeof steps_);
  return state;
}

void CpuReplica::RestoreStepCount(const std::vector<uint8_t>& state) {
  if (state.empty()) {
    steps_ = 0;
    return;
  }
  if (state.size() != sizeof steps_ || regularization_.dropout == 0)
    throw std::invalid_argument("step count state of " + std::to_string(state.size()) +
                                " bytes for a replica " + (regularization_.dropout == 0 ? "without dropout" : "with dropout"));
  std::memcpy(&steps_, state.data(), sizeof steps_);
}

void CpuReplica::RestoreVelocity(const void* values, size_t count) {
  if (velocity_.params.empty()) {
    if (count != 0) throw std::invalid_argument("momentum state given to a replica without momentum");
    return;
  }
  if (count == 0) {
    std::fill(velocity_.params.begin(), velocity_.params.end(), 0.0f);
  } else if (count == velocity_.params.size()) {
    std::memcpy(velocity_.params.data(), values, count * sizeof(float));
  } else {
    throw std::invalid_argument("momentum state has " + std::to_string(count) + " values for " +
                                std::to_string(velocity_.params.size()) + " parameters");
  }
}

}  // namespace xmlt::engine
