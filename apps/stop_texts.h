// What a run a signal stopped says, worded once for the command line and Python: only the names
// of the settings differ (--checkpoint-dir or checkpoint_dir, --resume DIR or resume=DIR).
#pragma once

#include <string>

namespace xmlt::apps {

struct StopWording {
  const char* checkpoint_setting;  // where a run is told to checkpoint
  const char* resume_prefix;       // followed by the folder, how a run is told to resume from it
};
inline constexpr StopWording kCliWording{"--checkpoint-dir", "--resume "};
inline constexpr StopWording kPythonWording{"checkpoint_dir", "resume="};

// How the run goes on after a stop in training: "resume with --resume DIR", or that the progress
// is lost when `checkpoint_dir` is empty (no checkpoint was written).
std::string ResumeAdvice(const std::string& checkpoint_dir, const StopWording& wording);

// "stopped by signal N at a safe point; " and ResumeAdvice.
std::string StoppedInTrainingText(int signal, const std::string& checkpoint_dir, const StopWording& wording);

// A stop in the ranker stage, after training: "stopped by signal N in the ranker stage, after
// training; " `kept` (where the trained MLP is), and how a resume fits the ranker, or that none
// can when `checkpoint_dir` is empty.
std::string StoppedInRankerStageText(int signal, const std::string& kept, const std::string& checkpoint_dir,
                                     const StopWording& wording);

}  // namespace xmlt::apps
