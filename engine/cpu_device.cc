// The CPU device with the dense step; see cpu_device.h.
#include "engine/cpu_device.h"

#include <cstdint>
#include <memory>
#include <vector>

#include "engine/cpu_replica.h"

namespace xmlt::engine {
namespace {

class CpuDevice final : public Device {
 public:
  CpuDevice(const DeviceSpec& spec, const kernels::Model<float>& initial, uint32_t max_rows,
            float momentum, kernels::OutputMath math, const StepSettings& step_settings)
      : spec_(spec), replica_(initial, max_rows, momentum, math, step_settings) {}

  const DeviceSpec& spec() const override { return spec_; }
  kernels::cpu::LossResult TrainBatch(const data::Dataset& dataset, const uint64_t* rows,
                                      size_t count, float lr) override {
    return replica_.TrainBatch(dataset, rows, count, lr);
  }
  float* HostParams() override { return replica_.WeightsInBf16() ? nullptr : replica_.model().params.data(); }
  uint16_t* HostBf16Params() override { return replica_.WeightsInBf16() ? replica_.Bf16Params() : nullptr; }
  size_t NumParams() const override { return replica_.NumParams(); }
  bool KeepsBf16Weights() const override { return replica_.WeightsInBf16(); }
  void StreamParams(const ParamsSink& sink) override { replica_.StreamParams(sink); }
  void LoadParams(const void* values, size_t count) override { replica_.RestoreParams(values, count); }
  size_t OptimizerStateSize() const override { return replica_.VelocitySize(); }
  // From the replica's buffer: an fp32 state as it is, a bf16 one widened piece by piece.
  void StreamOptimizerState(const OptimizerStateSink& sink) override { replica_.StreamVelocity(sink); }
  void RestoreOptimizerState(const void* values, size_t count) override { replica_.RestoreVelocity(values, count); }
  std::vector<uint8_t> SaveExtraState() override { return replica_.SaveStepCount(); }
  void RestoreExtraState(const std::vector<uint8_t>& state) override { replica_.RestoreStepCount(state); }

 private:
  DeviceSpec spec_;
  CpuReplica replica_;
};

}  // namespace

std::unique_ptr<Device> MakeCpuDevice(const DeviceSpec& spec, const kernels::Model<float>& initial, uint32_t max_rows,
                                      float local_momentum, kernels::OutputMath math,
                                      const StepSettings& step_settings) {
  return std::make_unique<CpuDevice>(spec, initial, max_rows, local_momentum, math, step_settings);
}

}  // namespace xmlt::engine
