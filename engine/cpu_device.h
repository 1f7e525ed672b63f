// A CPU device with the dense step: its replica (engine/cpu_replica.h) trains every label of each
// batch, with the local momentum, dropout, the first layer's Adagrad and weight decay
// (engine/step_settings.h). Built through MakeDevice (engine/device.h), which checks the
// arguments first.
#pragma once

#include <cstdint>
#include <memory>

#include "engine/device.h"

namespace xmlt::engine {

std::unique_ptr<Device> MakeCpuDevice(const DeviceSpec& spec, const kernels::Model<float>& initial, uint32_t max_rows,
                                      float local_momentum, kernels::OutputMath math,
                                      const StepSettings& step_settings);

}  // namespace xmlt::engine
