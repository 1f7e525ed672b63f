// Weight decay and dropout in the CPU step (sparse_mlp.h, StepRule): their gradients against
// central finite differences of the regularized batch-mean loss, in double; the SGD and momentum
// updates against those gradients; the first layer's lazy decay; the dropout masks; bad values.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <stdexcept>
#include <vector>

#include "kernels/cpu/softmax_loss.h"
#include "kernels/cpu/sparse_mlp.h"
#include "tests/kernels/kernel_test_util.h"

namespace xmlt::kernels::cpu {
namespace {

// The objective TrainStep differentiates under `rule`: the batch-mean cross-entropy through the
// rule's dropout masks, plus the weight-decay penalty.
double RegularizedLoss(const Model<double>& model, const data::SparseBatch& batch, const StepRule<double>& rule,
                       MlpWorkspace<double>* ws) {
  TrainingForward(model, batch, rule, ws);
  const LossResult loss = SoftmaxCrossEntropy(ws->logits.data(), batch, model.shape.num_labels);
  return loss.loss_sum / loss.labeled_rows + WeightDecayPenalty(model, batch, rule.weight_decay);
}

StepRule<double> Regularized(double weight_decay, double dropout, uint64_t key = 7) {
  StepRule<double> rule;
  rule.weight_decay = weight_decay;
  rule.dropout = dropout;
  rule.dropout_key = key;
  return rule;
}

// The gradient TrainStep stores under `rule`.
Model<double> StoredGradient(const Model<double>& model, const data::SparseBatch& batch, StepRule<double> rule) {
  Model<double> copy = model;
  Model<double> gradient = ZeroModel<double>(model.shape);
  rule.gradient = &gradient;
  MlpWorkspace<double> ws(model.shape, batch.num_rows);
  TrainStep(&copy, batch, rule, &ws);
  EXPECT_EQ(copy.params, model.params) << "storing the gradient must not change the model";
  return gradient;
}

void CheckGradients(const ModelShape& shape, uint32_t rows, uint64_t seed, const StepRule<double>& rule) {
  Model<double> model = xmlt::testing::RandomModel<double>(shape, seed);
  const data::SparseBatch batch =
      xmlt::testing::RandomBatch(rows, uint32_t(shape.num_features), uint32_t(shape.num_labels), seed);
  const Model<double> gradient = StoredGradient(model, batch, rule);
  MlpWorkspace<double> ws(shape, rows);
  const double h = 1e-6;
  for (size_t i = 0; i < model.params.size(); ++i) {
    const double saved = model.params[i];
    model.params[i] = saved + h;
    const double plus = RegularizedLoss(model, batch, rule, &ws);
    model.params[i] = saved - h;
    const double minus = RegularizedLoss(model, batch, rule, &ws);
    model.params[i] = saved;
    const double numeric = (plus - minus) / (2 * h);
    EXPECT_LT(std::abs(numeric - gradient.params[i]) / std::max(1.0, std::abs(numeric)), 1e-6)
        << "parameter " << i << " of " << shape.ToString() << ": analytic " << gradient.params[i] << " numeric "
        << numeric;
  }
}

TEST(RegularizationGradient, WeightDecayOneHiddenLayer) { CheckGradients({11, {6}, 9}, 7, 1, Regularized(0.3, 0)); }

TEST(RegularizationGradient, WeightDecayTwoHiddenLayers) {
  CheckGradients({13, {7, 5}, 10}, 6, 2, Regularized(0.05, 0));
}

TEST(RegularizationGradient, DropoutOneHiddenLayer) { CheckGradients({11, {6}, 9}, 7, 3, Regularized(0, 0.4)); }

TEST(RegularizationGradient, DropoutThreeHiddenLayers) {
  CheckGradients({9, {8, 6, 5}, 4}, 5, 4, Regularized(0, 0.3));
}

TEST(RegularizationGradient, BothManyRows) { CheckGradients({17, {5}, 23}, 33, 5, Regularized(0.1, 0.5)); }

// The decay reaches every weight but the biases, and of the first layer only the rows of the
// features in the batch: their gradients move by exactly weight_decay x w, the others not at all.
TEST(RegularizationGradient, DecayIsLazyInTheFirstLayerAndSparesTheBiases) {
  const ModelShape shape{60, {4, 3}, 6};
  const Model<double> model = xmlt::testing::RandomModel<double>(shape, 6);
  const data::SparseBatch batch = xmlt::testing::RandomBatch(4, 60, 6, 6);
  const double decay = 0.25;
  const Model<double> plain = StoredGradient(model, batch, Regularized(0, 0));
  const Model<double> decayed = StoredGradient(model, batch, Regularized(decay, 0));
  std::vector<bool> present(60, false);
  for (uint32_t f : batch.feature_idx) present[f] = true;
  size_t absent = 0;
  for (uint32_t f = 0; f < 60; ++f) {
    absent += !present[f];
    for (uint32_t u = 0; u < 4; ++u) {
      const uint64_t i = uint64_t(f) * 4 + u;
      const double expected = plain.Weight(0)[i] + (present[f] ? decay * model.Weight(0)[i] : 0.0);
      EXPECT_NEAR(decayed.Weight(0)[i], expected, 1e-12) << "feature " << f;
    }
  }
  EXPECT_GT(absent, 30u) << "the test needs features outside the batch";
  for (size_t l = 0; l < shape.num_layers(); ++l) {
    for (uint64_t i = 0; i < model.layers[l].bias.size(); ++i)
      EXPECT_EQ(decayed.Bias(l)[i], plain.Bias(l)[i]) << "layer " << l;
    if (l == 0) continue;
    for (uint64_t i = 0; i < model.layers[l].weight.size(); ++i)
      EXPECT_NEAR(decayed.Weight(l)[i], plain.Weight(l)[i] + decay * model.Weight(l)[i], 1e-12) << "layer " << l;
  }
}

// The update rules apply the regularized gradient: plain SGD (the decay fused into the products'
// beta) and heavy-ball momentum, compared with w - lr g and v = m v + g, w -= lr v from the
// stored gradient.
TEST(RegularizationStep, SgdAndMomentumFollowTheRegularizedGradient) {
  for (const ModelShape& shape : {ModelShape{40, {6}, 9}, ModelShape{40, {7, 5}, 300}}) {
    SCOPED_TRACE(shape.ToString());
    const Model<double> model = xmlt::testing::RandomModel<double>(shape, 8);
    const data::SparseBatch batch = xmlt::testing::RandomBatch(9, 40, uint32_t(shape.num_labels), 8);
    StepRule<double> rule = Regularized(0.2, 0.3, 11);
    rule.lr = 0.7;
    const Model<double> g = StoredGradient(model, batch, rule);

    Model<double> sgd = model;
    MlpWorkspace<double> ws(shape, batch.num_rows);
    TrainStep(&sgd, batch, rule, &ws);
    for (size_t i = 0; i < model.params.size(); ++i)
      ASSERT_NEAR(sgd.params[i], model.params[i] - rule.lr * g.params[i], 1e-12) << "sgd, parameter " << i;

    Model<double> heavy = model;
    Model<double> velocity = xmlt::testing::RandomModel<double>(shape, 9);
    const Model<double> v0 = velocity;
    StepRule<double> momentum = rule;
    momentum.momentum = 0.9;
    momentum.velocity = &velocity;
    TrainStep(&heavy, batch, momentum, &ws);
    std::vector<bool> present(40, false);
    for (uint32_t f : batch.feature_idx) present[f] = true;
    const uint64_t first_layer = model.layers[0].weight.size(), units = shape.hidden[0];
    for (size_t i = 0; i < model.params.size(); ++i) {
      // Lazy momentum: first-layer rows outside the batch keep their velocity and weights.
      if (i < first_layer && !present[i / units]) {
        ASSERT_EQ(velocity.params[i], v0.params[i]);
        ASSERT_EQ(heavy.params[i], model.params[i]);
        continue;
      }
      const double v = 0.9 * v0.params[i] + g.params[i];
      ASSERT_NEAR(velocity.params[i], v, 1e-12) << "momentum, parameter " << i;
      ASSERT_NEAR(heavy.params[i], model.params[i] - rule.lr * v, 1e-12) << "momentum, parameter " << i;
    }
  }
}

// The masks: about the asked fraction dropped, the kept activations scaled by 1 / (1 - p), the
// same for a key and other for another, and none in the evaluation's Forward.
TEST(Dropout, MasksAreSeededScaledAndOffInEvaluation) {
  const ModelShape shape{50, {64}, 5};
  const Model<double> model = xmlt::testing::RandomModel<double>(shape, 10);
  const data::SparseBatch batch = xmlt::testing::RandomBatch(40, 50, 5, 10);
  MlpWorkspace<double> ws(shape, batch.num_rows);
  Forward(model, batch, &ws);
  const std::vector<double> plain = ws.activations[0];
  const double p = 0.3;
  TrainingForward(model, batch, Regularized(0, p, 21), &ws);
  const std::vector<double> dropped = ws.activations[0];
  uint64_t active = 0, kept = 0;
  for (uint32_t r = 0; r < batch.num_rows; ++r) {
    for (uint64_t u = 0; u < 64; ++u) {
      const uint64_t i = uint64_t(r) * 64 + u;
      const bool keeps = DropoutKeeps(21, 0, r, u, p);
      EXPECT_EQ(dropped[i], keeps ? plain[i] * (1 / (1 - p)) : 0.0) << "row " << r << " unit " << u;
      if (plain[i] > 0) {
        ++active;
        kept += keeps;
      }
    }
  }
  ASSERT_GT(active, 500u);
  EXPECT_NEAR(double(kept) / double(active), 1 - p, 0.05);
  uint64_t same = 0, total = 0;
  for (uint32_t r = 0; r < batch.num_rows; ++r)
    for (uint64_t u = 0; u < 64; ++u, ++total) same += DropoutKeeps(21, 0, r, u, p) == DropoutKeeps(22, 0, r, u, p);
  EXPECT_LT(double(same) / double(total), 0.7) << "another key must draw another mask";
  TrainingForward(model, batch, Regularized(0, p, 21), &ws);
  EXPECT_EQ(ws.activations[0], dropped);
  Forward(model, batch, &ws);
  EXPECT_EQ(ws.activations[0], plain) << "evaluation runs without dropout";
}

TEST(Dropout, ChangesTheStepAndTheDecayChangesIt) {
  const ModelShape shape{30, {16}, 7};
  const Model<double> model = xmlt::testing::RandomModel<double>(shape, 12);
  const data::SparseBatch batch = xmlt::testing::RandomBatch(8, 30, 7, 12);
  const Model<double> plain = StoredGradient(model, batch, Regularized(0, 0));
  EXPECT_NE(StoredGradient(model, batch, Regularized(0, 0.5, 1)).params, plain.params);
  EXPECT_NE(StoredGradient(model, batch, Regularized(0, 0.5, 1)).params,
            StoredGradient(model, batch, Regularized(0, 0.5, 2)).params);
  EXPECT_NE(StoredGradient(model, batch, Regularized(1e-3, 0)).params, plain.params);
}

TEST(RegularizationStep, RefusesBadValues) {
  const ModelShape shape{10, {4}, 3};
  Model<float> model = InitModel<float>(shape, 1);
  const data::SparseBatch batch = xmlt::testing::RandomBatch(3, 10, 3, 1);
  MlpWorkspace<float> ws(shape, 3);
  const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
  for (const auto& [decay, dropout] : std::vector<std::pair<float, float>>{
           {-1e-4f, 0}, {nan, 0}, {inf, 0}, {0, 1}, {0, 1.5f}, {0, -0.1f}, {0, nan}}) {
    StepRule<float> rule;
    rule.lr = 0.1f;
    rule.weight_decay = decay;
    rule.dropout = dropout;
    EXPECT_THROW(TrainStep(&model, batch, rule, &ws), std::invalid_argument) << decay << " " << dropout;
  }
}

}  // namespace
}  // namespace xmlt::kernels::cpu
