// What a training run reports, the callbacks it makes, and training on one device: the engine
// (multi_device_run.h) with a single replica, which the merge copies into the global model.
#pragma once

#include <functional>

#include "data/dataset.h"
#include "kernels/model.h"
#include "run/metrics_log.h"
#include "run/run_control.h"
#include "scheduler/train_options.h"

namespace xmlt::scheduler {

struct TrainResult {
  EvalRecord last;   // the final evaluation
  EvalRecord best;   // the evaluation with the highest P@1 on as many test rows as the last (ResultOf)
  uint64_t batches = 0;
  uint32_t rollbacks = 0;      // divergences rolled back
  int stopped_by_signal = 0;   // nonzero: stopped early on this signal (RunControl::stop_signal)
  std::string checkpoint;      // the last checkpoint written, if any
  std::string end_checkpoint_error;  // why the end-of-run checkpoint failed (the model is still good)
};

struct TrainCallbacks {
  std::function<void(const EvalRecord&)> on_eval;                      // after each evaluation
  std::function<void(uint64_t done, uint64_t total, double loss)> on_progress;  // after each batch
  std::function<void(const std::vector<EvalRecord>&)> on_resume;  // the resumed run's evaluations so far
  std::function<void(const std::string&)> on_event;               // rollbacks, dropped devices, checkpoints
};

// --algo single on `device` (the first CPU worker unless told otherwise): dynamic dispatch to the
// one device on the wall clock, no batch scaling, and a merge that takes the replica as the global
// model.
EngineOptions SingleDeviceEngine(const engine::DeviceSpec& device = {});

// Trains `model` in place on one CPU device (RunMultiDevice with SingleDeviceEngine()). `test` may
// be null (no evaluation; records carry only training data). `control` adds checkpoints, resuming,
// stopping on a signal and divergence rollbacks.
TrainResult Train(const data::Dataset& train, const data::Dataset* test, const TrainOptions& options,
                  kernels::Model<float>* model, const TrainCallbacks& callbacks = {},
                  const RunControl& control = {});

}  // namespace xmlt::scheduler
