// The flags of `xmltrain train` as given, and the typed options some of them bind to directly;
// train_settings.h turns the rest into options and checks them.
#pragma once

#include "apps/cli_app.h"
#include <string>
#include <vector>

#include "apps/cli.h"
#include "apps/command_input.h"
#include "engine/sampled_output.h"
#include "run/ranker_stage.h"
#include "run/run_control.h"
#include "scheduler/train_options.h"

namespace xmlt::apps {

struct TrainFlags {
  std::string train, train_labels, test, test_labels, metrics, model_out;
  std::string hidden = "auto";  // DefaultHidden of the data's shape unless given
  std::string eval_every = "epoch";
  std::string normalize = "l2";
  std::string final_eval = "full";
  std::string math = "auto";
  std::string lr = "0.3";
  std::string lr_schedule = "cosine";
  std::string input_optimizer = "auto";  // adagrad where every device runs the CPU's dense local step
  float input_lr = 0.1f;
  std::string preset = "default", lr_scaling, pert_weights;  // the last two: from the preset unless given
  std::string mega_batch_warmup;  // on or off; from the preset unless given
  std::string propensity = "0.55,1.5";
  std::string algo = "single", clock = "virtual", clock_costs = "model";
  std::string ranker = "auto", ranker_blend = "auto";  // settled into ranker_options before loading
  run::RankerOptions ranker_options;                    // --ranker-holdout, -shortlist, -passes bound here
  engine::SampledOutputOptions sampled_output;  // --slide-*: copied into `engine` by --algo slide or --cpu-output
  std::string cpu_output = "dense";             // the output layer of a multi-device run's CPU devices
  // Parsed once, in ApplyAlgorithm, into the typed fields of `engine`.
  std::string devices = "cpu:4", speed, hetero = "none", collective = "ring", merge_on = "auto";
  scheduler::EngineOptions engine;
  std::string schedule = "dynamic", merge = "normalized", momentum_mode = "heavy";
  CLI::App* command = nullptr;
  bool given(const char* flag) const;  // whether the command line named `flag`
  DataFlags data;
  scheduler::TrainOptions options;
  run::RunControl control;
  std::vector<std::string> faults;
  double rank_timeout_s = 1800;  // across MPI ranks: how long a rank waits for the others
};

// Adds the train command's flags to `cmd`, bound to `f`.
void AddTrainFlags(CLI::App* cmd, TrainFlags* f);

}  // namespace xmlt::apps
