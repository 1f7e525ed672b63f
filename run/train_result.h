// What a training run reports, and the callbacks it makes as it goes.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "run/metrics_log.h"

namespace xmlt::run {

struct TrainResult {
  EvalRecord last;   // the final evaluation
  EvalRecord best;   // the evaluation with the highest P@1 on as many test rows as the last (ResultOf)
  uint64_t batches = 0;
  uint32_t rollbacks = 0;      // divergences rolled back
  int stopped_by_signal = 0;   // nonzero: stopped early on this signal (RunControl::stop_signal)
  std::string checkpoint;      // the last checkpoint written, if any
  std::string end_checkpoint_error;  // why the end-of-run checkpoint failed (the model is still good)
  double planned_epochs = 0;            // the epochs --epochs planned
  double stopped_by_holdout_epoch = 0;  // nonzero: the held-out rows ended the run after this epoch
  // The virtual clock's costs the run charged (0 on the wall clock): seconds a row, and a parameter
  // of a replica in one merge.
  double row_cost_s = 0, merge_cost_s = 0;
};

struct TrainCallbacks {
  std::function<void(const EvalRecord&)> on_eval;                      // after each evaluation
  std::function<void(uint64_t done, uint64_t total, double loss)> on_progress;  // after each batch
  std::function<void(const std::vector<EvalRecord>&)> on_resume;  // the resumed run's evaluations so far
  std::function<void(const std::string&)> on_event;               // rollbacks, dropped devices, checkpoints
};

}  // namespace xmlt::run
