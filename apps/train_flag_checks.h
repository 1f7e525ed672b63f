// The flags of `xmltrain train` that need no data, checked before it is loaded (minutes at full
// size): each refusal is a std::invalid_argument naming its flag.
#pragma once

#include "apps/train_flags.h"
#include "apps/train_plan.h"

namespace xmlt::apps {

// The step's defaults, which every device implements: the plan's dropout 0.5 unless --dropout is
// given, and --input-optimizer auto as adagrad (its rate written after loading, by
// ScaleLearningRate); refuses a bad --input-optimizer, or --input-lr without Adagrad.
void PlanStepDefaults(const TrainFlags& f, TrainPlan* plan);

// A GPU of this rank's (`rank`, across ranks) that is not there, said before the data is loaded
// (minutes at full size).
void CheckGpusExist(const TrainPlan& plan, int rank);

// Flags that need no data are checked before the data is loaded (minutes at full size): the
// training options as given (with the step's defaults), the multi-device ones as the algorithm
// decided them, and flags that --algo single would ignore. Decides nothing.
void CheckFlagsBeforeLoading(const TrainFlags& f, const TrainPlan& plan);

}  // namespace xmlt::apps
