// How `xmltrain train`'s flags become its plan (train_plan.h), each part decided once, in a fixed
// order: before the data is loaded, everything that needs no data (so that a mistake costs no
// loading, minutes at full size); between the training and the test rows' loading, the model's
// shape (the test rows are read as its input, train_data.h); once the data is loaded, what its
// size decides: the presets and the memory plan. The learning rate is the run's next step
// (learning_rate_step.h), the plan's last. The parsers and checks these call are
// train_algorithm.h's, train_flag_checks.h's and train_settings.h's.
#pragma once

#include "apps/train_data.h"
#include "apps/train_flags.h"
#include "apps/train_plan.h"
#include "ranks/rank_group.h"

namespace xmlt::apps {

// The flags that need no data, parsed into the plan and checked, in the order their refusals
// (std::invalid_argument) take precedence: the algorithm and its devices (under MPI, every rank's:
// SpreadOverRanks), the step's defaults, the checks, the run's control, evaluation, math,
// propensity, learning-rate schedule and ranker. --hidden and --lr are checked here and decided
// after loading.
TrainPlan PlanBeforeLoading(const TrainFlags& f, ranks::RankGroup* ranks);

// Once the data is loaded (and the ranker's rows held out): the presets, the sampled output
// layer's preset, the ranks' agreement on what they train and the memory plan.
void PlanAfterLoading(const TrainFlags& f, ranks::RankGroup* ranks, const TrainingData& data, TrainPlan* plan);

}  // namespace xmlt::apps
