// Softmax cross-entropy: values against a direct formula, gradient properties, stability.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "kernels/cpu/softmax_loss.h"
#include "tests/kernels/kernel_test_util.h"

namespace xmlt::kernels::cpu {
namespace {

// loss_r = -(1/|Y|) sum_y log(exp(z_y) / sum_j exp(z_j)), written the naive way in long double.
double DirectLoss(const std::vector<double>& z, const std::vector<uint32_t>& labels) {
  long double sum = 0;
  for (double v : z) sum += std::exp((long double)v);
  long double loss = 0;
  for (uint32_t y : labels) loss -= std::log(std::exp((long double)z[y]) / sum);
  return double(loss / labels.size());
}

TEST(SoftmaxLoss, MatchesTheDirectFormulaAndGradientRowsSumToZero) {
  const uint32_t labels = 13;
  const data::SparseBatch batch = xmlt::testing::RandomBatch(6, 20, labels, 21);
  std::mt19937_64 rng(21);
  std::normal_distribution<double> normal(0, 2);
  std::vector<double> logits(6 * labels);
  for (double& v : logits) v = normal(rng);
  const std::vector<double> original = logits;

  const LossResult forward = SoftmaxCrossEntropy(logits.data(), batch, labels);
  const LossResult backward = SoftmaxCrossEntropyBackward(logits.data(), batch, labels);
  double expected = 0;
  uint32_t labeled = 0;
  for (uint32_t r = 0; r < 6; ++r) {
    std::vector<uint32_t> ys(batch.label_idx.begin() + batch.label_ptr[r],
                             batch.label_idx.begin() + batch.label_ptr[r + 1]);
    if (ys.empty()) continue;
    ++labeled;
    expected += DirectLoss({original.begin() + r * labels, original.begin() + (r + 1) * labels}, ys);
  }
  EXPECT_EQ(forward.labeled_rows, labeled);
  EXPECT_EQ(backward.labeled_rows, labeled);
  EXPECT_NEAR(forward.loss_sum, expected, 1e-10);
  EXPECT_NEAR(backward.loss_sum, expected, 1e-10);
  for (uint32_t r = 0; r < 6; ++r) {
    double row_sum = 0;
    for (uint32_t j = 0; j < labels; ++j) row_sum += logits[r * labels + j];
    EXPECT_NEAR(row_sum, 0.0, 1e-12) << "row " << r;
    if (batch.NumLabels(r) == 0) {
      for (uint32_t j = 0; j < labels; ++j) EXPECT_EQ(logits[r * labels + j], 0.0);
    }
  }
}

TEST(SoftmaxLoss, UniformLogitsGiveLogOfLabelCount) {
  const uint32_t labels = 1000;
  const data::SparseBatch batch = xmlt::testing::RandomBatch(4, 10, labels, 22);
  std::vector<float> logits(4 * labels, 3.5f);
  const LossResult loss = SoftmaxCrossEntropy(logits.data(), batch, labels);
  EXPECT_NEAR(loss.loss_sum / loss.labeled_rows, std::log(1000.0), 1e-5);
}

TEST(SoftmaxLoss, StableForHugeLogitsAndShiftInvariant) {
  const uint32_t labels = 7;
  const data::SparseBatch batch = xmlt::testing::RandomBatch(3, 10, labels, 23);
  std::vector<float> small(3 * labels), huge(3 * labels);
  for (size_t i = 0; i < small.size(); ++i) {
    small[i] = float(i % 5) - 2.0f;
    huge[i] = small[i] + 1.0e4f;  // exp(1e4) overflows unless the max is subtracted
  }
  const LossResult a = SoftmaxCrossEntropyBackward(small.data(), batch, labels);
  const LossResult b = SoftmaxCrossEntropyBackward(huge.data(), batch, labels);
  ASSERT_TRUE(std::isfinite(b.loss_sum));
  EXPECT_NEAR(a.loss_sum, b.loss_sum, 1e-3);
  for (size_t i = 0; i < small.size(); ++i) EXPECT_NEAR(small[i], huge[i], 1e-5) << i;
}

TEST(SoftmaxLoss, GradientIsSoftmaxMinusUniformTargetOverLabeledRows) {
  data::SparseBatch batch;
  batch.num_rows = 2;
  batch.feature_ptr = {0, 0, 0};
  batch.label_ptr = {0, 2, 2};  // row 0 has labels 0 and 2; row 1 has none
  batch.label_idx = {0, 2};
  std::vector<double> z = {0.0, std::log(2.0), std::log(3.0), 5, 6, 7};  // softmax row 0: 1/6, 2/6, 3/6
  SoftmaxCrossEntropyBackward(z.data(), batch, 3);
  EXPECT_NEAR(z[0], 1.0 / 6 - 0.5, 1e-12);
  EXPECT_NEAR(z[1], 2.0 / 6, 1e-12);
  EXPECT_NEAR(z[2], 3.0 / 6 - 0.5, 1e-12);
  EXPECT_EQ(z[3], 0.0);
  EXPECT_EQ(z[4], 0.0);
  EXPECT_EQ(z[5], 0.0);
}

// The row maximum must see every label, the last one too (it sits in the vector loop's tail): with
// the largest logit 200 above the rest, a maximum that missed it would clamp or overflow the
// exponentials. The loss and gradient match the direct formula wherever the largest logit is.
template <class T>
void ExpectStableWhereverTheLargestLogitIs(double tolerance) {
  const uint32_t labels = 37;  // not a multiple of any vector width
  for (const uint32_t top : {0u, 1u, labels / 2, labels - 2, labels - 1}) {
    for (const uint32_t label : {top, (top + 5) % labels}) {
      data::SparseBatch batch;
      batch.num_rows = 1;
      batch.feature_ptr = {0, 0};
      batch.label_ptr = {0, 1};
      batch.label_idx = {label};
      std::vector<double> exact(labels);
      for (uint32_t j = 0; j < labels; ++j) exact[j] = 0.25 * double(j % 7) + (j == top ? 200.0 : 0.0);
      std::vector<T> z(exact.begin(), exact.end());
      const LossResult forward = SoftmaxCrossEntropy(z.data(), batch, labels);
      const LossResult backward = SoftmaxCrossEntropyBackward(z.data(), batch, labels);
      const std::string where = "largest logit at " + std::to_string(top) + ", label " + std::to_string(label);
      const double loss = DirectLoss(exact, {label});
      EXPECT_NEAR(forward.loss_sum, loss, tolerance * std::max(1.0, loss)) << where;
      EXPECT_NEAR(backward.loss_sum, loss, tolerance * std::max(1.0, loss)) << where;
      long double sum = 0;
      for (double v : exact) sum += std::exp((long double)(v - 200));
      for (uint32_t j = 0; j < labels; ++j) {
        const double p = double(std::exp((long double)(exact[j] - 200)) / sum);
        EXPECT_NEAR(double(z[j]), p - (j == label ? 1.0 : 0.0), tolerance) << where << ", gradient of " << j;
      }
    }
  }
}

TEST(SoftmaxLoss, StableWhereverTheLargestLogitIsTheLastIncluded) {
  ExpectStableWhereverTheLargestLogitIs<float>(1e-5);
  ExpectStableWhereverTheLargestLogitIs<double>(1e-10);
}

}  // namespace
}  // namespace xmlt::kernels::cpu
