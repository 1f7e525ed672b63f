// The run's learning rate as a step of the run; see learning_rate_step.h.
#include "apps/learning_rate_step.h"

#include <optional>

#include "apps/resume_settings.h"
#include "apps/train_learning_rate.h"

namespace xmlt::apps {

LearningRateStep SetLearningRate(const TrainFlags& f, ranks::RankGroup* ranks, const TrainingData& data,
                                 const StopCheck& stopped, TrainPlan* plan) {
  LearningRateStep step;
  const std::optional<float> resumed_lr = ResumedLearningRate(f, *plan);
  step.stopped_by_signal = stopped("while the data loaded");
  if (step.stopped_by_signal != 0) return step;
  std::optional<float> lr = resumed_lr ? resumed_lr : GivenLearningRate(f);
  if (!lr) {  // --lr auto, on a run that does not resume
    const LrSearchPick pick = SearchBaseLearningRate(f, *plan, data.train, ranks->size(), ranks->rank() == 0);
    step.lr_search = pick.report;
    lr = pick.lr;
    step.stopped_by_signal = stopped("while --lr auto searched");
    if (step.stopped_by_signal != 0) return step;
  }
  ScaleLearningRate(f, *lr, resumed_lr.has_value(), ranks->rank() == 0, plan);
  RecordResumeSettings(f, *lr, resumed_lr.has_value(), !step.lr_search.is_null(), plan);
  return step;
}

}  // namespace xmlt::apps
