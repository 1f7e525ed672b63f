// A checkpoint folder belongs to one run: the run that wrote its checkpoint, continued with
// --resume. A new run does not replace that checkpoint, and no other output of a run is the
// folder or one of the files the checkpoint keeps in it. Both are refused before the data is read
// (std::invalid_argument: exit 2), so that nothing is trained only to be lost.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "engine/device_spec.h"

namespace xmlt::apps {

// (flag, path) outputs: refused when a path is `folder` (given as `folder_flag`: --checkpoint-dir
// or --resume) itself or the checkpoint, a temporary file of the checkpoint's (which a checkpoint
// write deletes as stale), or the folder's lock. Empty paths and an empty folder are not checked.
void RefuseOutputsInCheckpointFolder(const std::string& folder_flag, const std::string& folder,
                                     const std::vector<std::pair<std::string, std::string>>& outputs);

// The learning rate the run checkpointed in `folder` trains at, when it trained on `devices` (on
// other devices a resume re-plans with the initial rate); nullopt otherwise, or when the
// checkpoint cannot be read (resuming reports that). A resume goes on at this rate unless --lr
// gives a number: the default, or another search, would silently change the run's rate.
std::optional<float> CheckpointedLearningRate(const std::string& folder, const std::vector<engine::DeviceSpec>& devices);

// The output products' math the run checkpointed in `folder` trained with ("fp32", "bf16",
// "tf32"); nullopt when the checkpoint cannot be read (resuming reports that).
std::optional<std::string> CheckpointedOutputMath(const std::string& folder);
// The checkpointed run's --optimizer-state, "fp32" or "bf16"; nullopt as above.
std::optional<std::string> CheckpointedOptimizerState(const std::string& folder);
// The checkpointed run's --weights, "fp32" or "bf16"; nullopt as above.
std::optional<std::string> CheckpointedWeights(const std::string& folder);

// `folder` (--checkpoint-dir) holding a checkpoint that this run does not resume (`resume_dir`
// is another folder, or empty) is refused, naming --resume as the way to continue it. Call it
// while holding the folder's lock, so that no other run writes one in between.
void RefuseReplacingAnotherRunsCheckpoint(const std::string& folder, const std::string& resume_dir);

}  // namespace xmlt::apps
