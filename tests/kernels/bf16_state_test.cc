// The optimizer state kept in bf16 (kernels/cpu/stochastic_rounding.h, StepRule::velocity_bf16):
// the rounding itself, the step that keeps it against the fp32 step it rounds, and that step
// against finite differences of the loss.
#include <gtest/gtest.h>

#include <cmath>
#include <stdexcept>
#include <vector>

#include "kernels/cpu/bf16_gemm.h"
#include "kernels/cpu/sparse_mlp.h"
#include "kernels/cpu/stochastic_rounding.h"
#include "tests/kernels/finite_differences.h"
#include "tests/kernels/float_bits.h"
#include "tests/kernels/kernel_test_util.h"

namespace xmlt::kernels::cpu {
namespace {

using xmlt::testing::Bits;
using xmlt::testing::FromBits;

// A value lands on one of its two bf16 neighbours (the one below in magnitude for noise 0, the
// one above for the largest noise), and a value a bf16 holds stays itself for any noise.
TEST(StochasticRounding, GivesOneOfTheTwoNeighbours) {
  for (const float x : {1.0f + 0x1p-10f, -3.14159f, 1e-30f, -7.5e20f, 0.1f}) {
    const float down = FromBits(Bits(x) & 0xffff0000u);
    const float up = FromBits((Bits(x) & 0xffff0000u) + 0x10000u);
    EXPECT_EQ(WidenBf16(StochasticBf16(x, 0)), down) << x;
    EXPECT_EQ(WidenBf16(StochasticBf16(x, 0xffff)), up) << x;
    for (uint32_t noise = 0; noise < 0x10000; noise += 97) {
      const float got = WidenBf16(StochasticBf16(x, noise));
      EXPECT_TRUE(got == down || got == up) << x << " noise " << noise << ": " << got;
    }
  }
  for (const float exact : {0.0f, -0.0f, 1.0f, -2.5f, 0.15625f, FromBits(0x3f810000u)})
    for (const uint32_t noise : {0u, 1u, 0x8000u, 0xffffu}) EXPECT_EQ(WidenBf16(StochasticBf16(exact, noise)), exact);
}

// Over every noise value the rounding's mean is the value itself: it rounds up with probability
// equal to how far the value is past its lower neighbour. Round-to-nearest would lose a small
// update entirely.
TEST(StochasticRounding, IsUnbiasedOverTheNoise) {
  for (const float x : {1.0f + 0x1p-12f, 1.0f + 0x1p-9f + 0x1p-14f, -0.7f, 123.456f}) {
    double sum = 0;
    for (uint32_t noise = 0; noise < 0x10000; ++noise) sum += WidenBf16(StochasticBf16(x, noise));
    EXPECT_EQ(sum / 0x10000, double(x)) << x;
  }
}

TEST(StochasticRounding, KeepsInfinitiesAndNaN) {
  for (const uint32_t noise : {0u, 0xffffu}) {
    EXPECT_EQ(WidenBf16(StochasticBf16(INFINITY, noise)), INFINITY);
    EXPECT_EQ(WidenBf16(StochasticBf16(-INFINITY, noise)), -INFINITY);
    EXPECT_TRUE(std::isnan(WidenBf16(StochasticBf16(NAN, noise))));
    EXPECT_TRUE(std::isnan(WidenBf16(StochasticBf16(FromBits(0x7f800001u), noise))));  // a payload in the low bits only
  }
}

// The noise is 16 bits, spread evenly, and another key or index draws another.
TEST(StochasticRounding, NoiseIsSixteenEvenBits) {
  constexpr uint64_t kCount = 1 << 18;
  std::vector<uint64_t> buckets(16, 0);
  double mean = 0;
  uint64_t same_as_other_key = 0;
  for (uint64_t i = 0; i < kCount; ++i) {
    const uint32_t noise = RoundingNoise(12345, i + (i % 3) * (uint64_t(1) << 33));
    ASSERT_LT(noise, 0x10000u);
    ++buckets[noise >> 12];
    mean += noise;
    same_as_other_key += noise == RoundingNoise(12346, i);
  }
  EXPECT_NEAR(mean / kCount, 32767.5, 200);  // sd of the mean is 36
  for (uint64_t b : buckets) EXPECT_NEAR(double(b), kCount / 16.0, 6 * std::sqrt(kCount / 16.0));
  EXPECT_LT(same_as_other_key, 30u);  // about 4 expected by chance
}

// Two hidden layers, so that every kind of tensor steps: the first layer's rows, a hidden weight
// and the biases (widened for their products), and the output layer's blocks.
const ModelShape kShape{60, {24, 16}, 300};

std::vector<uint16_t> ToBf16(const std::vector<float>& values) {
  std::vector<uint16_t> out(values.size());
  for (size_t i = 0; i < values.size(); ++i) out[i] = FloatToBf16(values[i]);
  return out;
}

// The bf16 state's step is the fp32 step from the widened state, bit for bit in the weights, with
// each value of the state that the step wrote stored as the fp32 step's value rounded with its own
// noise, and every other value left alone; for momentum everywhere, and with the first layer's
// Adagrad.
TEST(StepRuleBf16State, IsTheFp32StepWithEachValueRoundedAfter) {
  if (!Bf16Available(nullptr)) GTEST_SKIP() << "no native bf16 here: the bf16 state needs bf16 products";
  const Model<float> start = xmlt::testing::RandomModel<float>(kShape, 51);
  for (const bool adagrad : {false, true}) {
    // A state a bf16 buffer holds: nonzero everywhere, non-negative where it is Adagrad's squares.
    Model<float> velocity = ZeroModel<float>(kShape);
    for (size_t i = 0; i < velocity.params.size(); ++i) {
      const bool squares = adagrad && i < start.layers[0].weight.size();
      velocity.params[i] = WidenBf16(FloatToBf16(squares ? 0.01f * float(1 + i % 5) : 0.02f * (float(i % 9) - 4.0f)));
    }
    std::vector<uint16_t> state = ToBf16(velocity.params);
    Model<float> fp32_model = start, bf16_model = start;
    MlpWorkspace<float> ws(kShape, 32, OutputMath::kBf16);
    for (uint64_t step = 0; step < 3; ++step) {
      const data::SparseBatch batch = xmlt::testing::RandomBatch(32, 60, 300, 60 + step);
      const std::vector<float> before = velocity.params;
      StepRule<float> fp32_rule{0.2f, 0.9f, &velocity, nullptr};
      fp32_rule.input_adagrad = adagrad;
      fp32_rule.input_lr = 0.05f;
      StepRule<float> bf16_rule = fp32_rule;
      bf16_rule.velocity = nullptr;
      bf16_rule.velocity_bf16 = state.data();
      bf16_rule.rounding_key = 977 + uint32_t(step);
      TrainStep(&fp32_model, batch, fp32_rule, &ws);
      TrainStep(&bf16_model, batch, bf16_rule, &ws);
      ASSERT_EQ(fp32_model.params, bf16_model.params) << "step " << step << (adagrad ? ", Adagrad" : "");
      for (size_t i = 0; i < state.size(); ++i) {
        const uint16_t expected =
            velocity.params[i] == before[i] ? FloatToBf16(before[i])
                                            : StochasticBf16(velocity.params[i], RoundingNoise(bf16_rule.rounding_key, i));
        ASSERT_EQ(state[i], expected) << "value " << i << " at step " << step;
      }
      // The next step starts both from the stored state.
      for (size_t i = 0; i < state.size(); ++i) velocity.params[i] = WidenBf16(state[i]);
    }
  }
}

// One step from a zero state moves every parameter by -lr x its gradient: the finite difference of
// the loss (in double), to the bf16 products' precision. The state then holds that gradient to a
// bf16 step (momentum) or its square (Adagrad's first layer, which moved by input_lr against the
// gradient's sign).
TEST(StepRuleBf16State, FirstStepFollowsTheFiniteDifferenceGradient) {
  if (!Bf16Available(nullptr)) GTEST_SKIP() << "no native bf16 here: the bf16 state needs bf16 products";
  const ModelShape shape{30, {12}, 40};
  const Model<float> start = xmlt::testing::RandomModel<float>(shape, 71);
  const data::SparseBatch batch = xmlt::testing::RandomBatch(16, 30, 40, 71);
  Model<double> reference;
  reference.shape = shape;
  reference.layers = start.layers;
  reference.params.assign(start.params.begin(), start.params.end());
  MlpWorkspace<double> ws_double(shape, 16);
  std::vector<double> numeric(start.params.size());
  for (size_t i = 0; i < numeric.size(); ++i)
    numeric[i] = xmlt::testing::NumericDerivative(&reference, batch, &ws_double, i, 1e-5);

  const float lr = 1e-3f, input_lr = 1e-3f;
  Model<float> model = start;
  std::vector<uint16_t> state(start.params.size(), 0);
  MlpWorkspace<float> ws(shape, 16, OutputMath::kBf16);
  StepRule<float> rule{lr, 0.9f, nullptr, nullptr};
  rule.input_adagrad = true;
  rule.input_lr = input_lr;
  rule.velocity_bf16 = state.data();
  rule.rounding_key = 5;
  TrainStep(&model, batch, rule, &ws);

  // Per tensor, relative L2 errors: the step against -lr x the gradient, and the stored state
  // against the gradient (momentum) or its magnitude (the root of Adagrad's squares), each a few
  // times bf16's 2^-8 (the products' rounding, and the state's).
  const size_t first_layer = start.layers[0].weight.size();
  double step_error = 0, step_norm = 0, state_error = 0, state_norm = 0;
  size_t signs = 0;
  for (size_t i = 0; i < numeric.size(); ++i) {
    const double moved = double(start.params[i]) - double(model.params[i]);
    const double stored = WidenBf16(state[i]);
    if (i < first_layer) {
      // Adagrad's first step: input_lr x sign(g) on every coordinate with a gradient.
      if (std::abs(numeric[i]) < 1e-4) continue;
      ASSERT_NEAR(moved, input_lr * (numeric[i] > 0 ? 1 : -1), 0.02 * input_lr) << "parameter " << i;
      ++signs;
      state_error += std::pow(std::sqrt(stored) - std::abs(numeric[i]), 2);
    } else {
      step_error += std::pow(moved / lr - numeric[i], 2);
      step_norm += numeric[i] * numeric[i];
      state_error += std::pow(stored - numeric[i], 2);
    }
    state_norm += numeric[i] * numeric[i];
  }
  EXPECT_GT(signs, 50u);
  ASSERT_GT(step_norm, 0.0);
  EXPECT_LT(std::sqrt(step_error / step_norm), 0x1p-5);
  EXPECT_LT(std::sqrt(state_error / state_norm), 0x1p-5);
}

TEST(StepRuleBf16State, IsRefusedWithFp32ProductsOrBesideAnFp32Velocity) {
  if (!Bf16Available(nullptr)) GTEST_SKIP() << "no native bf16 here";
  const ModelShape shape{30, {12}, 40};
  Model<float> model = xmlt::testing::RandomModel<float>(shape, 72);
  const data::SparseBatch batch = xmlt::testing::RandomBatch(8, 30, 40, 72);
  std::vector<uint16_t> state(model.params.size(), 0);
  Model<float> velocity = ZeroModel<float>(shape);
  StepRule<float> rule{0.1f, 0.9f, nullptr, nullptr};
  rule.velocity_bf16 = state.data();
  MlpWorkspace<float> fp32(shape, 8, OutputMath::kFp32);
  EXPECT_THROW(TrainStep(&model, batch, rule, &fp32), std::invalid_argument);
  MlpWorkspace<float> bf16(shape, 8, OutputMath::kBf16);
  rule.velocity = &velocity;
  EXPECT_THROW(TrainStep(&model, batch, rule, &bf16), std::invalid_argument);
}

}  // namespace
}  // namespace xmlt::kernels::cpu
