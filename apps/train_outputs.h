// The outputs of `xmltrain train` are claimed before the data is loaded, so that a bad path or a
// folder in use fails now, not after minutes of loading or hours of training: the model and
// metrics files, the checkpoint folder and its lock, and the metrics log.
#pragma once

#include <memory>
#include <string>

#include "apps/train_flags.h"
#include "apps/train_plan.h"
#include "apps/train_session.h"
#include "data/folder_lock.h"
#include "run/metrics_log.h"

namespace xmlt::apps {

// The plan's outputs: refuses outputs in the checkpoint folder, output paths that cannot be
// written, and outputs over an input (the flags') or over each other (std::invalid_argument), then
// takes the --checkpoint-dir lock on the writing rank (`writer`), held until the run ends; null
// when there is no folder to lock.
std::unique_ptr<data::FolderLock> ClaimTrainOutputs(const TrainFlags& f, const TrainPlan& plan,
                                                    const TrainSession& session, bool writer);

// --metrics' log (one that discards records for an empty path); a file another run is writing is
// refused as a usage error (std::invalid_argument).
std::unique_ptr<run::MetricsLog> OpenMetricsLog(const std::string& path);

}  // namespace xmlt::apps
