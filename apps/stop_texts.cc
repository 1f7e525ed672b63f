// The texts of a stopped run; see stop_texts.h.
#include "apps/stop_texts.h"

namespace xmlt::apps {

std::string ResumeAdvice(const std::string& checkpoint_dir, const StopWording& wording) {
  if (checkpoint_dir.empty()) return std::string("no ") + wording.checkpoint_setting + ", so the progress is lost";
  return "resume with " + (wording.resume_prefix + checkpoint_dir);
}

std::string StoppedInTrainingText(int signal, const std::string& checkpoint_dir, const StopWording& wording) {
  return "stopped by signal " + std::to_string(signal) + " at a safe point; " + ResumeAdvice(checkpoint_dir, wording);
}

std::string StoppedInRankerStageText(int signal, const std::string& kept, const std::string& checkpoint_dir,
                                     const StopWording& wording) {
  const std::string resume = checkpoint_dir.empty()
                                 ? std::string("no ") + wording.checkpoint_setting + ", so no resume can fit the ranker"
                                 : "resume with " + (wording.resume_prefix + checkpoint_dir) + " to fit it";
  return "stopped by signal " + std::to_string(signal) + " in the ranker stage, after training; " + kept + "; " +
         resume;
}

}  // namespace xmlt::apps
