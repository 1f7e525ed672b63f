// The run's learning rate, a step of the run of its own once the data is loaded and the flags are
// settled (settle_around_loading.h): --lr auto searches by training short runs, minutes at full
// size, which settling the flags should not hide. The rate is the checkpoint's on a resume, --lr's
// number, or the search's pick, then scaled for the devices (ScaleLearningRate) and recorded for a
// resume (RecordResumeSettings).
#pragma once

#include <functional>
#include <nlohmann/json.hpp>

#include "apps/train_data.h"
#include "apps/train_flags.h"
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

// Writes f.options.lr and f.options.input_lr with `scaling` (the preset's). `stopped` is asked
// before the search and after it: the longest waits before training.
LearningRateStep SetLearningRate(TrainFlags& f, ranks::RankGroup* ranks, const TrainingData& data, LrScaling scaling,
                                 const StopCheck& stopped);

}  // namespace xmlt::apps
