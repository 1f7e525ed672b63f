// A CPU device that trains with SLIDE's sampled output layer: its replica's output rows are
// bucketed in LSH tables, each row of a batch trains on its own active labels
// (kernels/lsh/sampled_step.h), and the rows it updated are rehashed on SLIDE's decaying schedule
// (first after 50 updates, each gap 10% longer). Every merge (once a mega-batch, for --algo slide
// too) and rollback replaces the parameters: the tables are rebuilt from them whole and the
// schedule starts again. Checkpoints keep the tables' keys and the schedule's place, so a resumed
// run, even from inside a mega-batch, is the uninterrupted run (with one thread, bit for bit).
// Evaluation scores every label, as on any CPU device. With dropout and the first layer's Adagrad
// (engine/step_settings.h), as the CPU's dense step.
#pragma once

#include <memory>

#include "engine/device.h"
#include "engine/sampled_output.h"

namespace xmlt::engine {

// Dropout and the first layer's Adagrad (`step_settings`) as the dense step's; no weight decay.
// Throws std::invalid_argument for a device that is not a CPU, a local momentum (the sampled step
// is plain SGD), a weight decay or bad options.
std::unique_ptr<Device> MakeSampledCpuDevice(const DeviceSpec& spec, const kernels::Model<float>& initial,
                                             const DeviceLimits& limits, float local_momentum,
                                             const SampledOutputOptions& options,
                                             const StepSettings& step_settings = {});

}  // namespace xmlt::engine
