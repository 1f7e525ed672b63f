// What a checkpoint records of `train`'s flags beyond the training loop's own settings
// (run::RunFingerprint): the ranker's, which decide the rows held out of training; how the
// learning rate scaled with the devices; where merges run. A resume that changes one is refused,
// naming its flag (setting_flags.h), as for the loop's own. The flags a resume may change are
// docs/long-runs.md's list.
#pragma once

#include "apps/train_flags.h"
#include "apps/train_presets.h"

namespace xmlt::apps {

// Writes f.control.outer_settings and f.control.notes, once the flags are settled (after loading:
// the ranker may then have been left out) and the learning rate is written. `rate` is the one
// ScaleLearningRate was given: the checkpoint's (`resumed`), --lr's, or the search's (`searched`).
void RecordResumeSettings(TrainFlags& f, LrScaling scaling, float rate, bool resumed, bool searched);

}  // namespace xmlt::apps
