// The fused SGD and momentum updates against the stored gradient applied by hand, in float.
#include <gtest/gtest.h>

#include <cmath>

#include "kernels/cpu/sparse_mlp.h"
#include "tests/kernels/kernel_test_util.h"

namespace xmlt::kernels::cpu {
namespace {

const ModelShape kShape{40, {8, 5}, 12};

Model<float> GradientAt(const Model<float>& model, const data::SparseBatch& batch) {
  Model<float> copy = model;
  Model<float> gradient = ZeroModel<float>(kShape);
  MlpWorkspace<float> ws(kShape, batch.num_rows);
  StepRule<float> rule;
  rule.gradient = &gradient;
  TrainStep(&copy, batch, rule, &ws);
  return gradient;
}

void ExpectNear(const std::vector<float>& actual, const std::vector<float>& expected) {
  ASSERT_EQ(actual.size(), expected.size());
  for (size_t i = 0; i < actual.size(); ++i)
    ASSERT_NEAR(actual[i], expected[i], 1e-5f * std::max(1.0f, std::abs(expected[i]))) << "parameter " << i;
}

TEST(StepRule, PlainSgdSubtractsLrTimesGradient) {
  const Model<float> start = xmlt::testing::RandomModel<float>(kShape, 11);
  const data::SparseBatch batch = xmlt::testing::RandomBatch(9, 40, 12, 11);
  const Model<float> gradient = GradientAt(start, batch);
  Model<float> model = start;
  MlpWorkspace<float> ws(kShape, 9);
  StepRule<float> rule;
  rule.lr = 0.25f;
  TrainStep(&model, batch, rule, &ws);
  std::vector<float> expected = start.params;
  for (size_t i = 0; i < expected.size(); ++i) expected[i] -= 0.25f * gradient.params[i];
  ExpectNear(model.params, expected);
}

TEST(StepRule, MomentumAccumulatesVelocityLazilyForFirstLayerRows) {
  const Model<float> start = xmlt::testing::RandomModel<float>(kShape, 12);
  const data::SparseBatch first = xmlt::testing::RandomBatch(5, 40, 12, 12);
  const data::SparseBatch second = xmlt::testing::RandomBatch(5, 40, 12, 13);
  const float lr = 0.1f, mu = 0.9f;
  Model<float> model = start;
  Model<float> velocity = ZeroModel<float>(kShape);
  MlpWorkspace<float> ws(kShape, 5);
  StepRule<float> rule{lr, mu, &velocity, nullptr};

  // Reference: v = mu v + g; w -= lr v, except first-layer weight rows of features absent from the
  // batch, which keep both their weight and their velocity.
  std::vector<float> w = start.params, v(start.params.size(), 0.0f);
  for (const data::SparseBatch* batch : {&first, &second}) {
    Model<float> at = start;
    at.params = w;
    const Model<float> g = GradientAt(at, *batch);
    std::vector<bool> present(40, false);
    for (uint32_t f : batch->feature_idx) present[f] = true;
    for (size_t i = 0; i < w.size(); ++i) {
      const bool first_layer_weight = i < start.layers[0].weight.size();
      if (first_layer_weight && !present[i / 8]) continue;
      v[i] = mu * v[i] + g.params[i];
      w[i] -= lr * v[i];
    }
    TrainStep(&model, *batch, rule, &ws);
  }
  ExpectNear(model.params, w);
  ExpectNear(velocity.params, v);
}

// The first layer's Adagrad: s += g^2, w -= input_lr g / (sqrt(s) + eps) on the batch's feature
// rows only, s in the velocity's first-layer weights; every other parameter keeps heavy ball.
TEST(StepRule, InputAdagradScalesEachFirstLayerCoordinateByItsOwnSquares) {
  const Model<float> start = xmlt::testing::RandomModel<float>(kShape, 15);
  const data::SparseBatch first = xmlt::testing::RandomBatch(5, 40, 12, 15);
  const data::SparseBatch second = xmlt::testing::RandomBatch(5, 40, 12, 16);
  const float lr = 0.1f, mu = 0.9f, input_lr = 0.03f;
  Model<float> model = start;
  Model<float> velocity = ZeroModel<float>(kShape);
  MlpWorkspace<float> ws(kShape, 5);
  StepRule<float> rule{lr, mu, &velocity, nullptr};
  rule.input_adagrad = true;
  rule.input_lr = input_lr;

  const size_t first_layer = start.layers[0].weight.size();
  std::vector<float> w = start.params, v(start.params.size(), 0.0f);
  for (const data::SparseBatch* batch : {&first, &second}) {
    Model<float> at = start;
    at.params = w;
    const Model<float> g = GradientAt(at, *batch);
    std::vector<bool> present(40, false);
    for (uint32_t f : batch->feature_idx) present[f] = true;
    for (size_t i = 0; i < w.size(); ++i) {
      if (i < first_layer) {
        if (!present[i / 8]) continue;
        v[i] += g.params[i] * g.params[i];
        w[i] -= input_lr * g.params[i] / (std::sqrt(v[i]) + float(kAdagradEpsilon));
      } else {
        v[i] = mu * v[i] + g.params[i];
        w[i] -= lr * v[i];
      }
    }
    TrainStep(&model, *batch, rule, &ws);
  }
  ExpectNear(model.params, w);
  ExpectNear(velocity.params, v);
  // A first step of Adagrad moves each touched coordinate by input_lr, whatever its gradient's
  // size: the property that gives rare features their larger steps.
  Model<float> once = start;
  Model<float> squares = ZeroModel<float>(kShape);
  StepRule<float> one{lr, 0.0f, &squares, nullptr};
  one.input_adagrad = true;
  one.input_lr = input_lr;
  TrainStep(&once, first, one, &ws);
  const Model<float> g = GradientAt(start, first);
  for (size_t i = 0; i < first_layer; ++i) {
    if (std::abs(g.params[i]) > 1e-6f) {
      ASSERT_NEAR(std::abs(once.params[i] - start.params[i]), input_lr, 1e-4f * input_lr) << "parameter " << i;
    }
  }
}

TEST(StepRule, InputAdagradNeedsAVelocityAndNoGradientOutput) {
  Model<float> model = xmlt::testing::RandomModel<float>(kShape, 17);
  MlpWorkspace<float> ws(kShape, 5);
  const data::SparseBatch batch = xmlt::testing::RandomBatch(5, 40, 12, 17);
  StepRule<float> rule;
  rule.lr = 0.1f;
  rule.input_adagrad = true;
  rule.input_lr = 0.1f;
  EXPECT_THROW(TrainStep(&model, batch, rule, &ws), std::invalid_argument);
  Model<float> velocity = ZeroModel<float>(kShape), gradient = ZeroModel<float>(kShape);
  rule.velocity = &velocity;
  rule.gradient = &gradient;
  EXPECT_THROW(TrainStep(&model, batch, rule, &ws), std::invalid_argument);
}

TEST(StepRule, WorkspaceRejectsLargerBatches) {
  Model<float> model = xmlt::testing::RandomModel<float>(kShape, 14);
  MlpWorkspace<float> ws(kShape, 4);
  const data::SparseBatch batch = xmlt::testing::RandomBatch(5, 40, 12, 14);
  StepRule<float> rule;
  rule.lr = 0.1f;
  EXPECT_THROW(TrainStep(&model, batch, rule, &ws), std::logic_error);
}

}  // namespace
}  // namespace xmlt::kernels::cpu
