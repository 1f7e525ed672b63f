// The fused output layer across many label blocks: its gradient against finite differences and
// against the unfused reference (full logits, softmax pass, three products), its SGD and momentum
// steps, and a result that does not depend on the thread count.
#include <gtest/gtest.h>
#include <tbb/task_arena.h>

#include <algorithm>
#include <cmath>
#include <random>

#include "kernels/cpu/bf16_gemm.h"
#include "kernels/cpu/gemm.h"
#include "kernels/cpu/output_layer.h"
#include "kernels/cpu/softmax_loss.h"
#include "kernels/cpu/sparse_mlp.h"
#include "tests/kernels/finite_differences.h"
#include "tests/kernels/kernel_test_util.h"

namespace xmlt::kernels::cpu {
namespace {

using xmlt::testing::MeanLoss;
using xmlt::testing::NumericDerivative;

// 520 rows make blocks of 256 labels: 9,000 labels are 36 blocks, more than the 32 groups, and
// the last block is partial.
const ModelShape kManyBlocks{7, {3}, 9000};
constexpr uint32_t kRows = 520;

TEST(OutputLayer, ShapeUnderTestSpansMoreBlocksThanGroups) {
  const OutputLayerWorkspace<double> ws(kManyBlocks.num_labels, 3, kRows);
  EXPECT_EQ(ws.block, 256u);
  EXPECT_EQ(ws.num_blocks, 36u);
  EXPECT_NE(kManyBlocks.num_labels % ws.block, 0u);
}

Model<double> FusedGradient(const Model<double>& model, const data::SparseBatch& batch,
                            LossResult* loss) {
  Model<double> copy = model;
  Model<double> gradient = ZeroModel<double>(model.shape);
  MlpWorkspace<double> ws(model.shape, batch.num_rows);
  StepRule<double> rule;
  rule.gradient = &gradient;
  *loss = TrainStep(&copy, batch, rule, &ws);
  return gradient;
}

TEST(OutputLayer, GradientMatchesFiniteDifferencesAcrossBlocks) {
  const Model<double> start = xmlt::testing::RandomModel<double>(kManyBlocks, 21);
  const data::SparseBatch batch = xmlt::testing::RandomBatch(kRows, 7, 9000, 21);
  LossResult loss;
  const Model<double> gradient = FusedGradient(start, batch, &loss);
  MlpWorkspace<double> ws(kManyBlocks, kRows);
  Model<double> model = start;
  EXPECT_NEAR(loss.loss_sum / loss.labeled_rows, MeanLoss(model, batch, &ws), 1e-12);

  // Every first-layer parameter, and output parameters at block and group edges and at random.
  std::vector<size_t> checked;
  const size_t out_w = model.layers[1].weight.offset, out_b = model.layers[1].bias.offset;
  for (size_t i = 0; i < out_w; ++i) checked.push_back(i);
  for (uint64_t label : {0ul, 255ul, 256ul, 511ul, 4095ul, 4096ul, 8703ul, 8704ul, 8999ul}) {
    for (uint64_t u = 0; u < 3; ++u) checked.push_back(out_w + label * 3 + u);
    checked.push_back(out_b + label);
  }
  for (uint32_t r = 0; r < 20; ++r)  // labels that carry targets, where the gradient is largest
    for (uint64_t i = batch.label_ptr[r]; i < batch.label_ptr[r + 1]; ++i)
      checked.push_back(out_b + batch.label_idx[i]);
  std::mt19937_64 rng(3);
  for (int i = 0; i < 60; ++i) checked.push_back(out_w + rng() % (out_b + 9000 - out_w));

  const double h = 1e-6;
  for (size_t i : checked) {
    const double numeric = NumericDerivative(&model, batch, &ws, i, h);
    EXPECT_NEAR(gradient.params[i], numeric, 1e-7 * std::max(1.0, std::abs(numeric)))
        << "parameter " << i;
  }
}

// The unfused computation, as the step did it before the fusion: all logits, the softmax pass
// that turns them into the output gradient, then dW = D^T A, db = column sums, dA = D W.
TEST(OutputLayer, GradientEqualsTheUnfusedProducts) {
  const Model<double> model = xmlt::testing::RandomModel<double>(kManyBlocks, 22);
  const data::SparseBatch batch = xmlt::testing::RandomBatch(kRows, 7, 9000, 22);
  LossResult fused_loss;
  const Model<double> gradient = FusedGradient(model, batch, &fused_loss);

  MlpWorkspace<double> ws(kManyBlocks, kRows);
  Forward(model, batch, &ws);
  const LossResult loss = SoftmaxCrossEntropyBackward(ws.logits.data(), batch, 9000);
  EXPECT_EQ(loss.labeled_rows, fused_loss.labeled_rows);
  EXPECT_NEAR(loss.loss_sum, fused_loss.loss_sum, 1e-9 * loss.loss_sum);
  std::vector<double> dw(9000 * 3, 0.0), db(9000, 0.0);
  Gemm<double>(Op::kTranspose, Op::kNone, 9000, 3, kRows, 1.0, ws.logits.data(), 9000,
               ws.activations[0].data(), 3, 0.0, dw.data(), 3);
  for (uint32_t r = 0; r < kRows; ++r)
    for (uint64_t j = 0; j < 9000; ++j) db[j] += ws.logits[uint64_t(r) * 9000 + j];
  for (uint64_t i = 0; i < dw.size(); ++i)
    ASSERT_NEAR(gradient.Weight(1)[i], dw[i], 1e-12) << "weight " << i;
  for (uint64_t j = 0; j < 9000; ++j) ASSERT_NEAR(gradient.Bias(1)[j], db[j], 1e-12) << "bias " << j;
}

// The targets are grouped by block for the fused passes: the order of a row's labels must not
// matter, nor a label in the last, partial block.
TEST(OutputLayer, GradientDoesNotDependOnTheOrderOfARowsLabels) {
  const Model<double> model = xmlt::testing::RandomModel<double>(kManyBlocks, 24);
  data::SparseBatch batch = xmlt::testing::RandomBatch(kRows, 7, 9000, 24);
  batch.label_idx[batch.label_ptr[0]] = 8999;  // the last label, in the partial block
  std::sort(batch.label_idx.begin() + batch.label_ptr[0], batch.label_idx.begin() + batch.label_ptr[1]);
  LossResult sorted_loss, reversed_loss;
  const Model<double> sorted = FusedGradient(model, batch, &sorted_loss);
  uint32_t rows_reordered = 0;
  for (uint32_t r = 0; r < kRows; ++r) {
    rows_reordered += batch.NumLabels(r) > 1;
    std::reverse(batch.label_idx.begin() + batch.label_ptr[r], batch.label_idx.begin() + batch.label_ptr[r + 1]);
  }
  ASSERT_GT(rows_reordered, kRows / 3);
  const Model<double> reversed = FusedGradient(model, batch, &reversed_loss);
  EXPECT_NEAR(reversed_loss.loss_sum, sorted_loss.loss_sum, 1e-12 * sorted_loss.loss_sum);
  for (size_t i = 0; i < sorted.params.size(); ++i)
    ASSERT_NEAR(reversed.params[i], sorted.params[i], 1e-13) << "parameter " << i;
  EXPECT_NE(sorted.Bias(1)[8999], 0.0);
}

Model<float> TrainSteps(int threads, bool momentum) {
  const ModelShape shape{50, {16}, 20000};
  Model<float> model = xmlt::testing::RandomModel<float>(shape, 23);
  Model<float> velocity = ZeroModel<float>(shape);
  MlpWorkspace<float> ws(shape, 64);
  StepRule<float> rule{0.3f, momentum ? 0.9f : 0.0f, momentum ? &velocity : nullptr, nullptr};
  tbb::task_arena arena(threads);
  arena.execute([&] {
    for (uint64_t step = 0; step < 3; ++step)
      TrainStep(&model, xmlt::testing::RandomBatch(64, 50, 20000, 30 + step), rule, &ws);
  });
  return model;
}

TEST(OutputLayer, StepIsBitForBitTheSameOnOneOrFourThreads) {
  for (bool momentum : {false, true}) {
    const Model<float> one = TrainSteps(1, momentum);
    const Model<float> four = TrainSteps(4, momentum);
    ASSERT_EQ(one.params, four.params) << (momentum ? "momentum" : "plain SGD");
  }
}

TEST(OutputLayer, MomentumStepAppliesTheStoredGradientAcrossBlocks) {
  const Model<double> start = xmlt::testing::RandomModel<double>(kManyBlocks, 24);
  const data::SparseBatch batch = xmlt::testing::RandomBatch(kRows, 7, 9000, 24);
  LossResult loss;
  const Model<double> g = FusedGradient(start, batch, &loss);
  Model<double> model = start;
  Model<double> velocity = ZeroModel<double>(kManyBlocks);
  for (uint64_t i = 0; i < velocity.params.size(); ++i) velocity.params[i] = 0.01 * double(i % 7);
  const Model<double> v0 = velocity;
  MlpWorkspace<double> ws(kManyBlocks, kRows);
  TrainStep(&model, batch, StepRule<double>{0.5, 0.9, &velocity, nullptr}, &ws);
  // The output layer's weights and biases (the first layer's are lazy: checked in StepRule tests).
  for (size_t i = model.layers[1].weight.offset; i < model.params.size(); ++i) {
    const double v = 0.9 * v0.params[i] + g.params[i];
    ASSERT_NEAR(velocity.params[i], v, 1e-12) << i;
    ASSERT_NEAR(model.params[i], start.params[i] - 0.5 * v, 1e-12) << i;
  }
}

// --math bf16: the same step with bfloat16 inputs to the three products. Its gradient stays within
// bf16's relative precision (2^-8) of the fp32 one, and each rule applies that gradient exactly
// as the fp32 path applies its own.
const ModelShape kBf16Shape{50, {16}, 20000};

Model<float> StepOnce(const Model<float>& start, const data::SparseBatch& batch, OutputMath math,
                      const StepRule<float>& rule) {
  Model<float> model = start;
  MlpWorkspace<float> ws(model.shape, batch.num_rows, math);
  TrainStep(&model, batch, rule, &ws);
  return model;
}

Model<float> GradientIn(OutputMath math, const Model<float>& start, const data::SparseBatch& batch) {
  Model<float> gradient = ZeroModel<float>(start.shape);
  StepOnce(start, batch, math, StepRule<float>{0, 0, nullptr, &gradient});
  return gradient;
}

TEST(OutputLayerBf16, GradientIsTheFp32GradientToBf16Precision) {
  if (!Bf16Available(nullptr)) GTEST_SKIP() << "no native bf16 here";
  const Model<float> start = xmlt::testing::RandomModel<float>(kBf16Shape, 31);
  const data::SparseBatch batch = xmlt::testing::RandomBatch(64, 50, 20000, 31);
  const Model<float> fp32 = GradientIn(OutputMath::kFp32, start, batch);
  const Model<float> bf16 = GradientIn(OutputMath::kBf16, start, batch);
  // Per tensor: the relative L2 error, a few times bf16's 2^-8 at most, and above fp32's noise
  // (the products did run in bf16).
  for (size_t layer = 0; layer < kBf16Shape.num_layers(); ++layer) {
    for (const TensorView& tensor : {start.layers[layer].weight, start.layers[layer].bias}) {
      double error = 0, norm = 0;
      for (uint64_t i = tensor.offset; i < tensor.offset + tensor.size(); ++i) {
        error += std::pow(double(bf16.params[i]) - fp32.params[i], 2);
        norm += std::pow(double(fp32.params[i]), 2);
      }
      ASSERT_GT(norm, 0.0);
      EXPECT_LT(std::sqrt(error / norm), 0x1p-6) << "layer " << layer << " at " << tensor.offset;
      if (layer == 1 && tensor.offset == start.layers[1].weight.offset) {
        EXPECT_GT(std::sqrt(error / norm), 1e-5) << "the output weights' gradient looks like fp32's";
      }
    }
  }
}

TEST(OutputLayerBf16, EachRuleAppliesTheBf16Gradient) {
  if (!Bf16Available(nullptr)) GTEST_SKIP() << "no native bf16 here";
  const Model<float> start = xmlt::testing::RandomModel<float>(kBf16Shape, 32);
  const data::SparseBatch batch = xmlt::testing::RandomBatch(64, 50, 20000, 32);
  const Model<float> g = GradientIn(OutputMath::kBf16, start, batch);
  const size_t out = start.layers[1].weight.offset;

  // a + b * c in float, whether or not the update fused the multiply-add (the AVX2 and AVX-512
  // kernels do, plain x86-64 does not): a few ulps of the larger term, not of a result that
  // cancels to near zero.
  auto near = [](float got, float a, float b, float c) {
    return std::abs(double(got) - (double(a) + double(b) * double(c))) <=
           4 * 0x1p-24 * std::max(std::abs(double(a)), std::abs(double(b) * double(c)));
  };
  const Model<float> plain = StepOnce(start, batch, OutputMath::kBf16, StepRule<float>{0.3f, 0, nullptr, nullptr});
  for (size_t i = out; i < start.params.size(); ++i)
    ASSERT_TRUE(near(plain.params[i], start.params[i], -0.3f, g.params[i])) << i << ": " << plain.params[i];

  Model<float> velocity = ZeroModel<float>(kBf16Shape);
  for (size_t i = 0; i < velocity.params.size(); ++i) velocity.params[i] = 0.01f * float(i % 7);
  const Model<float> v0 = velocity;
  const Model<float> heavy = StepOnce(start, batch, OutputMath::kBf16, StepRule<float>{0.3f, 0.9f, &velocity, nullptr});
  for (size_t i = out; i < start.params.size(); ++i) {
    ASSERT_TRUE(near(velocity.params[i], g.params[i], 0.9f, v0.params[i])) << i << ": " << velocity.params[i];
    ASSERT_TRUE(near(heavy.params[i], start.params[i], -0.3f, velocity.params[i])) << i << ": " << heavy.params[i];
  }
}

Model<float> Bf16Steps(int threads) {
  Model<float> model = xmlt::testing::RandomModel<float>(kBf16Shape, 33);
  Model<float> velocity = ZeroModel<float>(kBf16Shape);
  MlpWorkspace<float> ws(kBf16Shape, 64, OutputMath::kBf16);
  tbb::task_arena arena(threads);
  arena.execute([&] {
    for (uint64_t step = 0; step < 3; ++step)
      TrainStep(&model, xmlt::testing::RandomBatch(64, 50, 20000, 40 + step),
                StepRule<float>{0.3f, 0.9f, &velocity, nullptr}, &ws);
  });
  return model;
}

TEST(OutputLayerBf16, StepIsBitForBitTheSameOnOneOrFourThreads) {
  if (!Bf16Available(nullptr)) GTEST_SKIP() << "no native bf16 here";
  EXPECT_EQ(Bf16Steps(1).params, Bf16Steps(4).params);
}

TEST(OutputLayerBf16, IsRefusedForDoubleAndWhereTheCpuLacksIt) {
  EXPECT_THROW(OutputLayerWorkspace<double>(1000, 8, 16, OutputMath::kBf16), std::invalid_argument);
  if (Bf16Available(nullptr)) GTEST_SKIP() << "this CPU has native bf16: the refusal cannot be seen";
  EXPECT_THROW(OutputLayerWorkspace<float>(1000, 8, 16, OutputMath::kBf16), std::runtime_error);
}

}  // namespace
}  // namespace xmlt::kernels::cpu
