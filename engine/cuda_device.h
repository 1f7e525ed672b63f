// The CUDA device: a replica on a GPU (or one of several logical devices sharing one), built only
// when the CUDA backend is. Declared separately so that only the backend factory refers to it.
#pragma once

#include <memory>

#include "engine/device.h"

namespace xmlt::engine {

std::unique_ptr<Device> MakeCudaDevice(const DeviceSpec& spec, const kernels::Model<float>& initial,
                                       const DeviceLimits& limits, float local_momentum, kernels::OutputMath math);

}  // namespace xmlt::engine
