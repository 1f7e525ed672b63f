// What one `xmltrain train` run does, decided once from its flags (train_flags.h, what the user
// said): the typed options of the training loop, the engine, the run's control and the ranker,
// with the facts the data decided (the model's shape, the memory plan, the learning rate's
// scaling). The planning steps (plan_around_loading.h, learning_rate_step.h) each decide their
// part in a fixed order; from the learning rate on, the run only reads it.
#pragma once

#include <cstdint>
#include <string>

#include "apps/train_presets.h"
#include "engine/sampled_output.h"
#include "kernels/model.h"
#include "run/ranker_stage.h"
#include "run/run_control.h"
#include "scheduler/train_options.h"

namespace xmlt::apps {

struct TrainFlags;

struct TrainPlan {
  scheduler::TrainOptions options;
  scheduler::SchedulerOptions scheduling;
  run::RunControl control;
  run::RankerOptions ranker;
  bool holdout_stop = true;  // --holdout-stop auto: the ranker's held-out rows may end the MLP's epochs
  // This rank's outputs: --model and --metrics on rank 0; none on the other ranks of an MPI run
  // (SpreadOverRanks), whose model and metrics rank 0 writes.
  std::string model_out, metrics;
  kernels::ModelShape shape;                // PlanShape's, from the training rows alone
  uint64_t planned_host_bytes = 0;          // the memory plan's (CheckMemoryPlan)
  LrScaling lr_scaling = LrScaling::kNone;  // the preset's, for the learning rate's step
};

// The plan as the flags give it, before any step decided anything: the options CLI11 bound the
// flags into, and the outputs. The one reader of those bound options (TrainFlags keeps them to
// itself), so that nothing after planning can read a value the steps have not decided.
TrainPlan PlanAsGiven(const TrainFlags& f);

// The --slide-* flags as given (the algorithm's step copies them into the engine).
const engine::SampledOutputOptions& GivenSampledOutput(const TrainFlags& f);

}  // namespace xmlt::apps
