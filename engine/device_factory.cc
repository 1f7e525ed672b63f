// The backend factory: the one place that decides which implementation serves a DeviceSpec.
#include <stdexcept>

#include "engine/cpu_replica.h"
#include "engine/device.h"
#include "engine/device_query.h"

namespace xmlt::engine {
namespace {

class CpuDevice final : public Device {
 public:
  CpuDevice(const DeviceSpec& spec, const kernels::Model<float>& initial, uint32_t max_rows,
            float momentum)
      : spec_(spec), replica_(initial, max_rows, momentum) {}

  const DeviceSpec& spec() const override { return spec_; }
  kernels::cpu::LossResult TrainBatch(const data::Dataset& dataset, const uint64_t* rows,
                                      size_t count, float lr) override {
    return replica_.TrainBatch(dataset, rows, count, lr);
  }
  float* HostParams() override { return replica_.model().params.data(); }
  size_t NumParams() const override { return replica_.model().params.size(); }

 private:
  DeviceSpec spec_;
  CpuReplica replica_;
};

}  // namespace

std::unique_ptr<Device> MakeDevice(const DeviceSpec& spec, const kernels::Model<float>& initial,
                                   uint32_t max_batch_rows, float local_momentum) {
  if (spec.kind == DeviceKind::kCpu)
    return std::make_unique<CpuDevice>(spec, initial, max_batch_rows, local_momentum);
  // The CUDA backend is not part of this build yet; say so rather than falling back silently.
  throw std::invalid_argument("device " + spec.id + ": the CUDA backend is not available (" +
                              CudaDeviceSummary() + "); use --devices cpu:N");
}

}  // namespace xmlt::engine
