// The CUDA device: a replica on a GPU (or one of several logical devices sharing one), built only
// when the CUDA backend is. Declared separately so that only the backend factory refers to it.
#pragma once

#include <memory>

#include "engine/device.h"

namespace xmlt::engine {

// Dropout and the first layer's Adagrad (`step_settings`) as the CPU's dense step; no weight decay.
// A checkpoint moves the optimizer state through chunks of at most `state_chunk_bytes` (at least
// one value; tests make them small to cover several).
std::unique_ptr<Device> MakeCudaDevice(const DeviceSpec& spec, const kernels::Model<float>& initial,
                                       const DeviceLimits& limits, float local_momentum, kernels::OutputMath math,
                                       const StepSettings& step_settings = {},
                                       size_t state_chunk_bytes = kOptimizerStateChunkBytes);

}  // namespace xmlt::engine
