// The CUDA device: a replica on a GPU (or one of several logical devices sharing one), built only
// when the CUDA backend is. Declared separately so that only the backend factory refers to it.
#pragma once

#include <memory>

#include "engine/device.h"

namespace xmlt::engine {

// Dropout and the first layer's Adagrad (`regularization`) as the CPU's dense step; no weight decay.
std::unique_ptr<Device> MakeCudaDevice(const DeviceSpec& spec, const kernels::Model<float>& initial,
                                       const DeviceLimits& limits, float local_momentum, kernels::OutputMath math,
                                       const StepRegularization& regularization = {});

}  // namespace xmlt::engine
