// A device of another rank; see remote_device.h.
#include "engine/remote_device.h"

#include <cstring>
#include <stdexcept>
#include <string>

#include "engine/bf16_pieces.h"

namespace xmlt::engine {
namespace {

class RemoteDevice : public Device {
 public:
  RemoteDevice(const DeviceSpec& spec, const kernels::Model<float>& initial, bool bf16_weights)
      : spec_(spec), num_params_(initial.params.size()), bf16_weights_(bf16_weights) {}

  const DeviceSpec& spec() const override { return spec_; }
  kernels::cpu::LossResult TrainBatch(const data::Dataset&, const uint64_t*, size_t, float) override {
    throw std::logic_error("device " + spec_.id + " belongs to another rank: it trains there");
  }
  float* HostParams() override {
    if (bf16_weights_) return nullptr;
    if (params_.size() != num_params_) params_.assign(num_params_, 0.0f);
    return params_.data();
  }
  uint16_t* HostBf16Params() override {
    if (!bf16_weights_) return nullptr;
    if (bf16_params_.size() != num_params_) bf16_params_.assign(num_params_, 0);
    return bf16_params_.data();
  }
  bool KeepsBf16Weights() const override { return bf16_weights_; }
  size_t NumParams() const override { return num_params_; }
  void StreamParams(const ParamsSink& sink) override {
    if (!bf16_weights_) return Device::StreamParams(sink);
    StreamWidenedBf16(HostBf16Params(), num_params_, sink);
  }
  void LoadParams(const void* values, size_t count) override {
    if (!bf16_weights_) return Device::LoadParams(values, count);
    if (count != num_params_)
      throw std::invalid_argument("device " + spec_.id + ": " + std::to_string(count) + " parameters for " +
                                  std::to_string(num_params_));
    RoundToNearestBf16(values, count, HostBf16Params());
  }
  void ReleaseMirror() override {
    std::vector<float>().swap(params_);
    std::vector<uint16_t>().swap(bf16_params_);
    std::vector<float>().swap(optimizer_state_);
    std::vector<uint8_t>().swap(extra_state_);
  }
  // The owner's, gathered for a checkpoint (scheduler/rank_exchange.h, SendReplicasToRoot).
  size_t OptimizerStateSize() const override { return optimizer_state_.size(); }
  void StreamOptimizerState(const OptimizerStateSink& sink) override {
    if (!optimizer_state_.empty()) sink(optimizer_state_.data(), optimizer_state_.size());
  }
  void RestoreOptimizerState(const void* values, size_t count) override {
    optimizer_state_.resize(count);
    if (count != 0) std::memcpy(optimizer_state_.data(), values, count * sizeof(float));
  }
  std::vector<uint8_t> SaveExtraState() override { return extra_state_; }
  void RestoreExtraState(const std::vector<uint8_t>& state) override { extra_state_ = state; }
  EvaluationSums EvaluateRows(const kernels::Model<float>&, const data::Dataset&, const uint64_t*, size_t) override {
    throw std::logic_error("device " + spec_.id + " belongs to another rank: it evaluates there");
  }

 private:
  DeviceSpec spec_;
  size_t num_params_;
  bool bf16_weights_;
  std::vector<float> params_;         // allocated when first asked for, until released
  std::vector<uint16_t> bf16_params_;  // the same, for an owner with bf16 weights
  std::vector<float> optimizer_state_;
  std::vector<uint8_t> extra_state_;
};

}  // namespace

std::unique_ptr<Device> MakeRemoteDevice(const DeviceSpec& spec, const kernels::Model<float>& initial,
                                         bool bf16_weights) {
  return std::make_unique<RemoteDevice>(spec, initial, bf16_weights);
}

}  // namespace xmlt::engine
