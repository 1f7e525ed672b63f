// The plan as the flags give it; see train_plan.h.
#include "apps/train_plan.h"

#include "apps/train_flags.h"

namespace xmlt::apps {

TrainPlan PlanAsGiven(const TrainFlags& f) {
  TrainPlan plan;
  plan.options = f.options;
  plan.scheduling = f.scheduling;
  plan.control = f.control;
  plan.ranker = f.ranker_options;
  plan.holdout_stop = f.holdout_stop == "auto";
  plan.model_out = f.model_out;
  plan.metrics = f.metrics;
  return plan;
}

const engine::SampledOutputOptions& GivenSampledOutput(const TrainFlags& f) { return f.sampled_output; }

}  // namespace xmlt::apps
