// When `xmltrain train`'s flags become the run's settings, each written once: before the data is
// loaded, everything that needs no data (so that a mistake costs no loading, minutes at full
// size); once it is loaded, what the data's size decides: the presets and the memory plan. The model's shape is settled between the training and the test rows' loading,
// since the test rows are read as its input (train_data.h). The parsers and checks these call are
// train_algorithm.h's, train_flag_checks.h's and train_settings.h's.
#pragma once

#include <cstdint>

#include "apps/train_data.h"
#include "apps/train_flags.h"
#include "apps/train_presets.h"
#include "data/dataset.h"
#include "kernels/model.h"
#include "ranks/rank_group.h"

namespace xmlt::apps {

// The flags that need no data, parsed into options and checked, in the order their refusals
// (std::invalid_argument) take precedence; --hidden and --lr are checked here and written after
// loading. Under MPI the run spans every rank's devices (SpreadOverRanks).
void SettleBeforeLoading(TrainFlags& f, ranks::RankGroup* ranks);

struct AfterLoading {
  uint64_t planned_host_bytes = 0;  // CheckMemoryPlan's
  LrScaling lr_scaling = LrScaling::kNone;  // the preset's, for the learning rate's step (learning_rate_step.h)
};

// The presets, the sampled output layer's preset, the ranks' agreement on what they train and the
// memory plan. The learning rate is the run's next step, not settling's.
AfterLoading SettleAfterLoading(TrainFlags& f, ranks::RankGroup* ranks, const TrainingData& data);

}  // namespace xmlt::apps
