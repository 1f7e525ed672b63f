// The final model (the MLP with its ranker) scored on the test rows of the run's last evaluation:
// all of them, or the --eval-rows sample with --final-eval sample, so that its figures stand beside
// the MLP's last evaluation on the same rows.
#pragma once

#include "data/dataset.h"
#include "engine/evaluator.h"
#include "engine/trained_model.h"
#include "scheduler/train_options.h"

namespace xmlt::run {

engine::Evaluation EvaluateFinalModel(const engine::TrainedModel& model, const data::Dataset& test,
                                      const scheduler::TrainOptions& options);

}  // namespace xmlt::run
