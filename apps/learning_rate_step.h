// The run's learning rate, a step of the run of its own once the data is loaded and the rest is
// planned (plan_around_loading.h): --lr auto searches by training short runs, minutes at full
// size, which planning should not hide. The rate is the checkpoint's on a resume, --lr's
// number, or the search's pick, then scaled for the devices (ScaleLearningRate) and recorded for a
// resume (RecordResumeSettings).
#pragma once

#include <functional>
#include <nlohmann/json.hpp>

#include "apps/train_data.h"
#include "apps/train_flags.h"
#include "apps/train_plan.h"
#include "apps/train_presets.h"
#include "ranks/rank_group.h"

namespace xmlt::apps {

// A signal that asks the run to stop before training, or 0 while none; `during` names the wait in
// what is said.
using StopCheck = std::function<int(const char* during)>;

struct LearningRateStep {
  nlohmann::json lr_search;   // the summary's "lr_search": null when --lr auto did not search
  int stopped_by_signal = 0;  // non-zero: a stop was asked for, and the learning rate is not set
};

// Writes the plan's options.lr and options.input_lr with its lr_scaling (the preset's), and what a
// checkpoint records of them; the plan's last step. `stopped` is asked before the search and after
// it: the longest waits before training.
LearningRateStep SetLearningRate(const TrainFlags& f, ranks::RankGroup* ranks, const TrainingData& data,
                                 const StopCheck& stopped, TrainPlan* plan);

}  // namespace xmlt::apps
