// The flags of `xmltrain train` as given, and the typed options some of them bind to directly.
// Planning (train_plan.h) reads them once, const, and decides the run's TrainPlan; the bound
// options are private, read only by PlanAsGiven, so the run cannot read one the plan decided.
#pragma once

#include <string>
#include <vector>

#include "apps/cli.h"
#include "apps/cli_app.h"
#include "apps/command_input.h"
#include "engine/sampled_output.h"
#include "run/ranker_stage.h"
#include "run/run_control.h"
#include "scheduler/train_options.h"

namespace xmlt::apps {

struct TrainPlan;  // train_plan.h

struct TrainFlags {
  std::string train, train_labels, test, test_labels, metrics, model_out;
  std::string hidden = "auto";  // DefaultHidden of the data's shape unless given
  std::string eval_every = "epoch";
  std::string normalize = "l2";
  std::string final_eval = "full";
  std::string math = "auto";
  std::string optimizer_state = "auto";  // --optimizer-state
  std::string weights = "auto";          // --weights
  std::string lr = "0.3";
  std::string lr_schedule = "cosine";
  std::string input_optimizer = "auto";  // adagrad where every device runs the CPU's dense local step
  float input_lr = 0.1f;
  std::string preset = "default", lr_scaling, pert_weights;  // the last two: from the preset unless given
  std::string mega_batch_warmup;  // on or off; from the preset unless given
  std::string propensity = "0.55,1.5";
  std::string algo = "single", clock = "virtual", clock_costs = "model";
  std::string ranker = "auto", ranker_blend = "auto";  // decided into the plan's ranker before loading
  std::string holdout_stop = "auto";  // --holdout-stop: the ranker's held-out rows may end the MLP's epochs
  std::string cpu_output = "dense";             // the output layer of a multi-device run's CPU devices
  // Parsed once, in ApplyAlgorithm, into the typed fields of the plan's engine.
  std::string devices = "cpu:4", speed, hetero = "none", collective = "ring", merge_on = "auto";
  std::string schedule = "dynamic", merge = "normalized", momentum_mode = "heavy";
  CLI::App* command = nullptr;
  bool given(const char* flag) const;  // whether the command line named `flag`
  DataFlags data;
  std::vector<std::string> faults;
  double rank_timeout_s = 1800;  // across MPI ranks: how long a rank waits for the others

 private:
  // The options CLI11 binds flags into directly, as given: the plan starts from them
  // (PlanAsGiven) and its steps decide the rest. Private, so that the run reads the plan's.
  scheduler::TrainOptions options;
  scheduler::SchedulerOptions scheduling;
  run::RunControl control;
  run::RankerOptions ranker_options;            // --ranker-holdout, -shortlist, -passes
  engine::SampledOutputOptions sampled_output;  // --slide-*: copied into the engine by --algo slide or --cpu-output
  friend void AddTrainFlags(CLI::App* cmd, TrainFlags* f);
  friend TrainPlan PlanAsGiven(const TrainFlags& f);
  friend const engine::SampledOutputOptions& GivenSampledOutput(const TrainFlags& f);
};

// Adds the train command's flags to `cmd`, bound to `f`.
void AddTrainFlags(CLI::App* cmd, TrainFlags* f);

}  // namespace xmlt::apps
