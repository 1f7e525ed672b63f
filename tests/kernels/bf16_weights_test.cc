// The weights kept in bf16 with no fp32 copy (StepRule::weights_bf16): the step against the fp32
// step it rounds, bit for bit, and against finite differences of the loss.
#include <gtest/gtest.h>

#include <cmath>
#include <stdexcept>
#include <string>
#include <vector>

#include "kernels/cpu/bf16_gemm.h"
#include "kernels/cpu/sparse_mlp.h"
#include "kernels/cpu/stochastic_rounding.h"
#include "tests/kernels/finite_differences.h"
#include "tests/kernels/kernel_test_util.h"

namespace xmlt::kernels::cpu {
namespace {

// Two hidden layers, so that every kind of tensor steps: the first layer's rows, a hidden weight
// and the biases (widened for the step), and the output layer's blocks, 1,200 labels x 16 inputs
// so that a block spans several of the pieces widened at a time.
const ModelShape kShape{60, {24, 16}, 1200};

std::vector<uint16_t> ToBf16(const std::vector<float>& values) {
  std::vector<uint16_t> out(values.size());
  for (size_t i = 0; i < values.size(); ++i) out[i] = FloatToBf16(values[i]);
  return out;
}

std::vector<float> Widen(const std::vector<uint16_t>& values) {
  std::vector<float> out(values.size());
  for (size_t i = 0; i < values.size(); ++i) out[i] = WidenBf16(values[i]);
  return out;
}

// The model's shape and layout with no fp32 parameters: what a replica with bf16 weights holds.
Model<float> LayoutOnly(const ModelShape& shape) {
  Model<float> model;
  model.shape = shape;
  model.layers = LayoutOf(shape);
  return model;
}

enum class Rule { kSgd, kMomentum, kAdagrad, kMomentumWithDecay };

std::string Name(Rule rule) {
  switch (rule) {
    case Rule::kSgd: return "SGD";
    case Rule::kMomentum: return "momentum";
    case Rule::kAdagrad: return "Adagrad";
    case Rule::kMomentumWithDecay: return "momentum with weight decay";
  }
  return "?";
}

// The step on bf16 weights is the fp32 step from the widened weights, with every weight stored as
// that step's value rounded with its own noise (a weight the step left alone stays itself): under
// plain SGD, momentum, the first layer's Adagrad and weight decay, the state (kept in bf16 beside
// them) bit for bit the same.
TEST(StepRuleBf16Weights, IsTheFp32StepWithEachWeightRoundedAfter) {
  if (!Bf16Available(nullptr)) GTEST_SKIP() << "no native bf16 here: bf16 weights need bf16 products";
  for (const Rule kind : {Rule::kSgd, Rule::kMomentum, Rule::kAdagrad, Rule::kMomentumWithDecay}) {
    std::vector<uint16_t> weights = ToBf16(xmlt::testing::RandomModel<float>(kShape, 81).params);
    Model<float> fp32_model = LayoutOnly(kShape), bf16_model = LayoutOnly(kShape);
    std::vector<uint16_t> fp32_state(weights.size(), 0), bf16_state(weights.size(), 0);
    MlpWorkspace<float> fp32_ws(kShape, 32, OutputMath::kBf16), bf16_ws(kShape, 32, OutputMath::kBf16);
    for (uint64_t step = 0; step < 3; ++step) {
      fp32_model.params = Widen(weights);
      const data::SparseBatch batch = xmlt::testing::RandomBatch(32, 60, 1200, 90 + step);
      StepRule<float> fp32_rule{0.2f, 0.0f, nullptr, nullptr};
      if (kind != Rule::kSgd) {
        fp32_rule.momentum = 0.9f;
        fp32_rule.velocity_bf16 = fp32_state.data();
        fp32_rule.rounding_key = 301 + uint32_t(step);
      }
      fp32_rule.input_adagrad = kind == Rule::kAdagrad;
      fp32_rule.input_lr = 0.05f;
      if (kind == Rule::kMomentumWithDecay) fp32_rule.weight_decay = 0.01f;
      StepRule<float> bf16_rule = fp32_rule;
      if (kind != Rule::kSgd) bf16_rule.velocity_bf16 = bf16_state.data();
      bf16_rule.weights_bf16 = weights.data();
      bf16_rule.weights_rounding_key = 7001 + uint32_t(step);
      TrainStep(&fp32_model, batch, fp32_rule, &fp32_ws);
      TrainStep(&bf16_model, batch, bf16_rule, &bf16_ws);
      ASSERT_TRUE(bf16_model.params.empty());
      ASSERT_EQ(fp32_state, bf16_state) << Name(kind) << ", step " << step;
      size_t moved = 0;
      for (size_t i = 0; i < weights.size(); ++i) {
        const uint16_t expected = StochasticBf16(fp32_model.params[i], RoundingNoise(bf16_rule.weights_rounding_key, i));
        ASSERT_EQ(weights[i], expected) << Name(kind) << ": weight " << i << " at step " << step;
        moved += WidenBf16(weights[i]) != fp32_model.params[i];
      }
      EXPECT_GT(moved, weights.size() / 4) << "the rounding was exercised";
    }
  }
}

// One SGD step moves every parameter by -lr x its gradient: the finite difference of the loss (in
// double). Each stored weight is one draw of the stochastic rounding, whose error (up to a bf16
// step of the weight) is larger than a small step, so the step is taken with 64 rounding keys and
// their mean compared: unbiased rounding takes that mean to the fp32 step, to the bf16 products'
// precision.
TEST(StepRuleBf16Weights, MeanStepFollowsTheFiniteDifferenceGradient) {
  if (!Bf16Available(nullptr)) GTEST_SKIP() << "no native bf16 here: bf16 weights need bf16 products";
  const ModelShape shape{30, {12}, 40};
  const std::vector<uint16_t> start = ToBf16(xmlt::testing::RandomModel<float>(shape, 73).params);
  const data::SparseBatch batch = xmlt::testing::RandomBatch(16, 30, 40, 73);
  Model<double> reference;
  reference.shape = shape;
  reference.layers = LayoutOf(shape);
  for (const uint16_t w : start) reference.params.push_back(WidenBf16(w));
  MlpWorkspace<double> ws_double(shape, 16);
  std::vector<double> numeric(start.size());
  for (size_t i = 0; i < numeric.size(); ++i)
    numeric[i] = xmlt::testing::NumericDerivative(&reference, batch, &ws_double, i, 1e-5);

  constexpr int kKeys = 64;
  const float lr = 2.0f;
  std::vector<double> mean_moved(start.size(), 0.0);
  Model<float> model = LayoutOnly(shape);
  MlpWorkspace<float> ws(shape, 16, OutputMath::kBf16);
  for (int key = 0; key < kKeys; ++key) {
    std::vector<uint16_t> weights = start;
    StepRule<float> rule{lr, 0.0f, nullptr, nullptr};
    rule.weights_bf16 = weights.data();
    rule.weights_rounding_key = 1000 + uint32_t(key);
    TrainStep(&model, batch, rule, &ws);
    for (size_t i = 0; i < start.size(); ++i)
      mean_moved[i] += (double(WidenBf16(start[i])) - double(WidenBf16(weights[i]))) / kKeys;
  }
  // Per tensor, the relative L2 error of the mean step against -lr x the gradient.
  for (const LayerView& layer : reference.layers) {
    for (const TensorView& view : {layer.weight, layer.bias}) {
      double error = 0, norm = 0;
      for (size_t i = view.offset; i < view.offset + view.size(); ++i) {
        error += std::pow(mean_moved[i] / lr - numeric[i], 2);
        norm += numeric[i] * numeric[i];
      }
      ASSERT_GT(norm, 0.0) << "tensor at " << view.offset;
      EXPECT_LT(std::sqrt(error / norm), 0x1p-5) << "tensor at " << view.offset;
    }
  }
}

TEST(StepRuleBf16Weights, IsRefusedWithFp32ProductsOrAGradientOutput) {
  if (!Bf16Available(nullptr)) GTEST_SKIP() << "no native bf16 here";
  const ModelShape shape{30, {12}, 40};
  std::vector<uint16_t> weights = ToBf16(xmlt::testing::RandomModel<float>(shape, 74).params);
  Model<float> model = LayoutOnly(shape);
  const data::SparseBatch batch = xmlt::testing::RandomBatch(8, 30, 40, 74);
  StepRule<float> rule{0.1f, 0.0f, nullptr, nullptr};
  rule.weights_bf16 = weights.data();
  MlpWorkspace<float> fp32(shape, 8, OutputMath::kFp32);
  EXPECT_THROW(TrainStep(&model, batch, rule, &fp32), std::invalid_argument);
  MlpWorkspace<float> bf16(shape, 8, OutputMath::kBf16);
  Model<float> gradient = ZeroModel<float>(shape);
  rule.gradient = &gradient;
  EXPECT_THROW(TrainStep(&model, batch, rule, &bf16), std::invalid_argument);
  rule.gradient = nullptr;
  EXPECT_THROW(TrainingForward(model, batch, rule, &bf16), std::invalid_argument);
  // Without the bf16 weights, a model with no parameters is refused rather than read.
  rule.weights_bf16 = nullptr;
  EXPECT_THROW(TrainStep(&model, batch, rule, &bf16), std::invalid_argument);
}

}  // namespace
}  // namespace xmlt::kernels::cpu
