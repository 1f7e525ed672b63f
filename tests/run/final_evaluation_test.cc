// The final model is scored on the rows of the run's last evaluation: the whole test set, or with
// --final-eval sample the --eval-rows sample, whose propensity-scored figures keep the propensities
// of the whole training set.
#include "run/final_evaluation.h"

#include <gtest/gtest.h>

#include <vector>

#include "data/row_subset.h"
#include "kernels/model.h"
#include "tests/scheduler/scheduler_test_support.h"

namespace xmlt::run {
namespace {

struct Scored {
  data::GeneratedData data = testing::NormalizedData(60, 40, 30, 6, 4, 5);
  engine::TrainedModel model;
  Scored() {
    model.mlp = kernels::InitModel<float>(
        kernels::ModelShape{data.train.num_features(), {8}, data.train.num_labels()}, 2);
    std::vector<float> propensities(data.train.num_labels());
    for (size_t l = 0; l < propensities.size(); ++l) propensities[l] = 1.0f + float(l);
    data.test.inverse_propensity = data::SharedArray<float>(std::move(propensities));
  }
};

TEST(FinalEvaluation, TheWholeTestSetByDefault) {
  Scored s;
  scheduler::TrainOptions options;
  options.eval_rows = 7;  // the sample of the other evaluations: not the last one's
  const engine::Evaluation final_eval = EvaluateFinalModel(s.model, s.data.test, options);
  const engine::Evaluation whole = engine::Evaluate(s.model, s.data.test);
  EXPECT_EQ(final_eval.rows, 40u);
  EXPECT_DOUBLE_EQ(final_eval.metrics.p1, whole.metrics.p1);
  EXPECT_DOUBLE_EQ(final_eval.metrics.psp1, whole.metrics.psp1);
}

TEST(FinalEvaluation, TheSampleWithItsPropensitiesWhenAsked) {
  Scored s;
  scheduler::TrainOptions options;
  options.eval_rows = 7;
  options.final_eval_full = false;
  const engine::Evaluation final_eval = EvaluateFinalModel(s.model, s.data.test, options);
  data::Dataset sample = data::SelectRows(s.data.test, scheduler::EvalSample(40, options));
  sample.inverse_propensity = s.data.test.inverse_propensity;
  const engine::Evaluation expected = engine::Evaluate(s.model, sample);
  EXPECT_EQ(final_eval.rows, 7u);
  EXPECT_DOUBLE_EQ(final_eval.metrics.p1, expected.metrics.p1);
  EXPECT_DOUBLE_EQ(final_eval.metrics.psp1, expected.metrics.psp1);
  EXPECT_GT(final_eval.metrics.psp1 + final_eval.metrics.psp5, 0.0) << "the propensities were dropped";
}

}  // namespace
}  // namespace xmlt::run
