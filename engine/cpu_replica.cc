// CPU replica; see cpu_replica.h.
#include "engine/cpu_replica.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <string>

#include "engine/bf16_pieces.h"
#include "kernels/cpu/bf16_gemm.h"
#include "kernels/cpu/stochastic_rounding.h"

namespace xmlt::engine {
namespace {

// SplitMix64's finalizer, to turn (seed, stream, step) into a dropout key.
uint64_t Mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

// Sets the bf16 state's and weights' rounding noise apart from the dropout masks drawn from the
// same step key, and from each other.
constexpr uint64_t kRoundingSalt = 0x5f0d2b7c9a4e3611ULL;
constexpr uint64_t kWeightsRoundingSalt = 0x3c6ef372fe94f82bULL;

using Sink = std::function<void(const float* values, size_t count)>;

// Hands `fp32` to `sink` in pieces or, when it is empty, `bf16` widened a piece at a time.
void StreamPieces(const std::vector<float>& fp32, const std::vector<uint16_t>& bf16, const Sink& sink) {
  for (size_t at = 0; at < fp32.size(); at += kBf16Piece)
    sink(fp32.data() + at, std::min(kBf16Piece, fp32.size() - at));
  StreamWidenedBf16(bf16.data(), bf16.size(), sink);
}

}  // namespace

CpuReplica::CpuReplica(kernels::Model<float> model, uint32_t max_batch_rows, float momentum,
                       kernels::OutputMath math, StepSettings step_settings)
    : model_(std::move(model)),
      momentum_(momentum),
      step_settings_(step_settings),
      workspace_(model_.shape, max_batch_rows, math) {
  // Written so that NaN fails too.
  if (!(momentum_ >= 0 && momentum_ < 1)) throw std::invalid_argument("momentum must be in [0, 1)");
  if (!(step_settings_.weight_decay >= 0) || !std::isfinite(step_settings_.weight_decay))
    throw std::invalid_argument("weight decay must be a finite number >= 0");
  if (!(step_settings_.dropout >= 0 && step_settings_.dropout < 1))
    throw std::invalid_argument("dropout must be in [0, 1)");
  if (!(step_settings_.input_adagrad_ratio >= 0) || !std::isfinite(step_settings_.input_adagrad_ratio))
    throw std::invalid_argument("the first layer's Adagrad rate must be a finite number >= 0");
  if (step_settings_.bf16_weights) {
    if (math != kernels::OutputMath::kBf16)
      throw std::invalid_argument("bf16 weights need the output layer's products in bf16 (--math bf16)");
    // Rounded to nearest once, at the start; every step after rounds stochastically.
    weights_bf16_.resize(model_.params.size());
    kernels::cpu::ConvertToBf16(model_.params.data(), model_.params.size(), weights_bf16_.data());
    std::vector<float>().swap(model_.params);
  }
  // The first layer's Adagrad keeps its squares where that layer's velocity would be.
  if (momentum_ > 0 || step_settings_.input_adagrad_ratio > 0) {
    if (!step_settings_.bf16_optimizer_state) {
      velocity_ = kernels::ZeroModel<float>(model_.shape);
    } else if (math != kernels::OutputMath::kBf16) {
      throw std::invalid_argument("a bf16 optimizer state needs the output layer's products in bf16 (--math bf16)");
    } else {
      velocity_bf16_.assign(NumParams(), 0);  // bf16 zero is all bits zero
    }
  }
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
  rule.velocity_bf16 = velocity_bf16_.empty() ? nullptr : velocity_bf16_.data();
  rule.input_adagrad = step_settings_.input_adagrad_ratio > 0;
  rule.input_lr = lr * step_settings_.input_adagrad_ratio;
  rule.weight_decay = step_settings_.weight_decay;
  rule.dropout = step_settings_.dropout;
  rule.dropout_key = Mix(Mix(Mix(step_settings_.seed) ^ step_settings_.stream) ^ steps_);
  rule.rounding_key = uint32_t(Mix(rule.dropout_key ^ kRoundingSalt));
  rule.weights_bf16 = weights_bf16_.empty() ? nullptr : weights_bf16_.data();
  rule.weights_rounding_key = uint32_t(Mix(rule.dropout_key ^ kWeightsRoundingSalt));
  const kernels::cpu::LossResult loss = kernels::cpu::TrainStep(&model_, batch_, rule, &workspace_);
  ++steps_;
  return loss;
}

void CpuReplica::StreamParams(const Sink& sink) const { StreamPieces(model_.params, weights_bf16_, sink); }

void CpuReplica::RestoreParams(const void* values, size_t count) {
  if (count != NumParams())
    throw std::invalid_argument("parameters have " + std::to_string(count) + " values for a model of " +
                                std::to_string(NumParams()));
  if (weights_bf16_.empty()) {
    std::memcpy(model_.params.data(), values, count * sizeof(float));
    return;
  }
  RoundToNearestBf16(values, count, weights_bf16_.data());
}

std::vector<uint8_t> CpuReplica::SaveStepCount() const {
  if (!KeepsStepCount()) return {};
  std::vector<uint8_t> state(sizeof steps_);
  std::memcpy(state.data(), &steps_, sizeof steps_);
  return state;
}

void CpuReplica::RestoreStepCount(const std::vector<uint8_t>& state) {
  if (state.empty()) {
    steps_ = 0;
    return;
  }
  if (state.size() != sizeof steps_ || !KeepsStepCount())
    throw std::invalid_argument("step count state of " + std::to_string(state.size()) + " bytes for a replica " +
                                (KeepsStepCount() ? "that keeps 8" : "without dropout or bf16 state or weights"));
  std::memcpy(&steps_, state.data(), sizeof steps_);
}

void CpuReplica::StreamVelocity(const Sink& sink) const { StreamPieces(velocity_.params, velocity_bf16_, sink); }

std::vector<float> CpuReplica::SaveVelocity() const {
  std::vector<float> values;
  values.reserve(VelocitySize());
  StreamVelocity([&](const float* piece, size_t count) { values.insert(values.end(), piece, piece + count); });
  return values;
}

void CpuReplica::RestoreVelocity(const void* values, size_t count) {
  const size_t size = VelocitySize();
  if (size == 0) {
    if (count != 0) throw std::invalid_argument("momentum state given to a replica without momentum");
    return;
  }
  if (count != 0 && count != size)
    throw std::invalid_argument("momentum state has " + std::to_string(count) + " values for " + std::to_string(size) +
                                " parameters");
  if (!velocity_.params.empty()) {
    if (count == 0) {
      std::fill(velocity_.params.begin(), velocity_.params.end(), 0.0f);
    } else {
      std::memcpy(velocity_.params.data(), values, count * sizeof(float));
    }
    return;
  }
  if (count == 0) {
    std::fill(velocity_bf16_.begin(), velocity_bf16_.end(), uint16_t(0));
    return;
  }
  RoundToNearestBf16(values, count, velocity_bf16_.data());
}

}  // namespace xmlt::engine
