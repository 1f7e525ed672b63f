// When `xmltrain train`'s flags become the run's settings, each written once: before the data is
// loaded, everything that needs no data (so that a mistake costs no loading, minutes at full
// size); once it is loaded, what the data's size decides: the presets, the memory plan, the
// learning rate. The model's shape is settled between the training and the test rows' loading,
// since the test rows are read as its input (train_data.h). The parsers and checks these call are
// train_algorithm.h's, train_flag_checks.h's and train_settings.h's.
#pragma once

#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>

#include "apps/train_data.h"
#include "apps/train_flags.h"
#include "data/dataset.h"
#include "kernels/model.h"
#include "ranks/rank_group.h"

namespace xmlt::apps {

// The flags that need no data, parsed into options and checked, in the order their refusals
// (std::invalid_argument) take precedence; --hidden and --lr are checked here and written after
// loading. Under MPI the run spans every rank's devices (SpreadOverRanks).
void SettleBeforeLoading(TrainFlags& f, ranks::RankGroup* ranks);

// A signal that asks the run to stop before training, or 0 while none; `during` names the wait in
// what is said.
using StopCheck = std::function<int(const char* during)>;

struct AfterLoading {
  uint64_t planned_host_bytes = 0;  // CheckMemoryPlan's
  nlohmann::json lr_search;         // the summary's "lr_search": null when --lr auto did not search
  int stopped_by_signal = 0;        // non-zero: a stop was asked for, and the learning rate is not settled
};

// The presets, the sampled output layer's preset, the ranks' agreement on what they train, the
// memory plan and the learning rate (a search for --lr auto, then ScaleLearningRate). `stopped`
// is asked before the search and after it: the longest waits before training.
AfterLoading SettleAfterLoading(TrainFlags& f, ranks::RankGroup* ranks, const TrainingData& data,
                                const StopCheck& stopped);

}  // namespace xmlt::apps
