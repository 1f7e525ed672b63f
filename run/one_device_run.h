// Training on one device: the engine (multi_device_run.h) with a single replica, which the merge
// copies into the global model.
#pragma once

#include "data/dataset.h"
#include "kernels/model.h"
#include "run/run_control.h"
#include "run/train_result.h"
#include "scheduler/train_options.h"

namespace xmlt::run {

// --algo single on `device` (the first CPU worker unless told otherwise): dynamic dispatch to the
// one device on the wall clock, no batch scaling, and a merge that takes the replica as the global
// model.
scheduler::SchedulerOptions SingleDeviceScheduling(const engine::DeviceSpec& device = {});

// Trains `model` in place on one CPU device (RunMultiDevice with SingleDeviceScheduling()). `test` may
// be null (no evaluation; records carry only training data). `control` adds checkpoints, resuming,
// stopping on a signal and divergence rollbacks.
TrainResult TrainOnOneDevice(const data::Dataset& train, const data::Dataset* test,
                             const scheduler::TrainOptions& options, kernels::Model<float>* model, const TrainCallbacks& callbacks = {},
                  const RunControl& control = {});

}  // namespace xmlt::run
