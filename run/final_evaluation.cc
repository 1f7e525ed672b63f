// See final_evaluation.h.
#include "run/final_evaluation.h"

#include "data/row_subset.h"

namespace xmlt::run {

engine::Evaluation EvaluateFinalModel(const engine::TrainedModel& model, const data::Dataset& test,
                                      const scheduler::TrainOptions& options) {
  if (options.final_eval_full) return engine::Evaluate(model, test);
  data::Dataset sample = data::SelectRows(test, scheduler::EvalSample(test.num_rows(), options));
  sample.inverse_propensity = test.inverse_propensity;  // the propensities of the whole training set
  return engine::Evaluate(model, sample);
}

}  // namespace xmlt::run
