// Single-device training: shuffled batches over the training rows, SGD steps on one CPU replica,
// evaluation on the schedule, metrics. The multi-device engine builds on the same pieces.
#pragma once

#include <functional>

#include "data/dataset.h"
#include "kernels/model.h"
#include "scheduler/metrics_log.h"
#include "scheduler/run_control.h"
#include "scheduler/train_options.h"

namespace xmlt::scheduler {

struct TrainResult {
  EvalRecord last;   // the final evaluation
  EvalRecord best;   // the evaluation with the highest P@1
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

// Trains `model` in place. `test` may be null (no evaluation; records carry only training data).
// `control` adds checkpoints, resuming, stopping on a signal and divergence rollbacks.
TrainResult Train(const data::Dataset& train, const data::Dataset* test, const TrainOptions& options,
                  kernels::Model<float>* model, const TrainCallbacks& callbacks = {},
                  const RunControl& control = {});

}  // namespace xmlt::scheduler
