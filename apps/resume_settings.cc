// What a checkpoint records of the flags; see resume_settings.h.
#include "apps/resume_settings.h"

#include <nlohmann/json.hpp>
#include <sstream>

#include "apps/train_algorithm.h"
#include "scheduler/train_options.h"

namespace xmlt::apps {

void RecordResumeSettings(const TrainFlags& f, float rate, bool resumed, bool searched, TrainPlan* plan) {
  const LrScaling scaling = plan->lr_scaling;
  const run::RankerOptions& ranker = plan->ranker;
  nlohmann::json settings = nlohmann::json::object();
  // Always recorded, so that a checkpoint holding none of these predates them (run::CheckSameRun).
  settings["ranker"] = ranker.enabled ? "auto" : "off";
  if (ranker.enabled) {
    settings["ranker_blend"] = ranker.choose_blend() ? nlohmann::json("auto") : nlohmann::json(ranker.blend);
    if (ranker.choose_blend()) settings["ranker_holdout"] = ranker.holdout;
  }
  // A resume without --lr goes on at the checkpoint's rate, which this scaling made: another
  // would be ignored there, so it is refused instead (one device scales nothing: "none").
  settings["lr_scaling"] = LrScalingName(scaling);
  settings["merge_on"] = scheduler::MergesOnGpus(plan->scheduling) ? "gpus" : "host";
  plan->control.outer_settings = settings;

  // How the rate came from the flags: a refused resume shows it beside the rates it compares.
  std::ostringstream lr;
  if (resumed) {
    lr << "the checkpoint's";
  } else {
    lr << (searched ? "--lr auto: " : "--lr ") << rate;
    if (!OneDevice(f)) {
      const size_t devices = plan->scheduling.devices.size();
      if (scaling == LrScaling::kNone) {
        lr << ", --lr-scaling none on " << devices << " devices";
      } else {
        lr << " scaled " << LrScalingName(scaling) << " for " << devices << " devices";
      }
    }
  }
  plan->control.notes = nlohmann::json::object({{"lr", lr.str()}});
}

}  // namespace xmlt::apps
