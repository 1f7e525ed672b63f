// What a checkpoint records of `train`'s flags beyond the training loop's own settings
// (run::RunFingerprint): the ranker's, which decide the rows held out of training; how the
// learning rate scaled with the devices; where merges run. A resume that changes one is refused,
// naming its flag (setting_flags.h), as for the loop's own. The flags a resume may change are
// docs/long-runs.md's list.
#pragma once

#include "apps/train_flags.h"
#include "apps/train_plan.h"
#include "apps/train_presets.h"

namespace xmlt::apps {

// Writes the plan's control.outer_settings and control.notes, once the rest is planned (after
// loading: the ranker may then have been left out) and the learning rate is written. `rate` is the
// one ScaleLearningRate was given: the checkpoint's (`resumed`), --lr's, or the search's (`searched`).
void RecordResumeSettings(const TrainFlags& f, float rate, bool resumed, bool searched, TrainPlan* plan);

}  // namespace xmlt::apps
