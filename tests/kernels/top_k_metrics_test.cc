// P@k and nDCG@k on rows worked out by hand.
#include <gtest/gtest.h>

#include <cmath>

#include "kernels/propensity.h"
#include "kernels/top_k_metrics.h"

namespace xmlt::kernels {
namespace {

double Gain(int rank) { return 1.0 / std::log2(rank + 1.0); }  // rank counted from 1

TEST(TopKMetrics, HandMadeRow) {
  // Predicted 7, 3, 9, 1, 4; true labels {1, 3, 8}: hits at ranks 2 and 4.
  const uint32_t top[5] = {7, 3, 9, 1, 4};
  const uint32_t labels[3] = {1, 3, 8};
  TopKAccumulator acc;
  acc.AddRow(top, labels, 3);
  const TopKMetrics m = acc.Mean();
  EXPECT_DOUBLE_EQ(m.p1, 0.0);
  EXPECT_DOUBLE_EQ(m.p3, 1.0 / 3);
  EXPECT_DOUBLE_EQ(m.p5, 2.0 / 5);
  EXPECT_NEAR(m.ndcg3, Gain(2) / (Gain(1) + Gain(2) + Gain(3)), 1e-12);
  EXPECT_NEAR(m.ndcg5, (Gain(2) + Gain(4)) / (Gain(1) + Gain(2) + Gain(3)), 1e-12);
}

TEST(TopKMetrics, SingleLabelIdealIsOneGainAndPerfectRowScoresOne) {
  const uint32_t top[5] = {2, 0, 1, 3, 4};
  const uint32_t one[1] = {2};
  TopKAccumulator acc;
  acc.AddRow(top, one, 1);
  TopKMetrics m = acc.Mean();
  EXPECT_DOUBLE_EQ(m.p1, 1.0);
  EXPECT_DOUBLE_EQ(m.p5, 0.2);
  EXPECT_DOUBLE_EQ(m.ndcg3, 1.0);
  EXPECT_DOUBLE_EQ(m.ndcg5, 1.0);
}

TEST(TopKMetrics, RowsWithoutLabelsCountAsZeroAndMergeAverages) {
  const uint32_t top[5] = {0, 1, 2, 3, 4};
  const uint32_t all[5] = {0, 1, 2, 3, 4};
  TopKAccumulator a, b;
  a.AddRow(top, all, 5);
  b.AddRow(top, nullptr, 0);
  a.Merge(b);
  const TopKMetrics m = a.Mean();
  EXPECT_EQ(a.rows(), 2u);
  EXPECT_DOUBLE_EQ(m.p1, 0.5);
  EXPECT_DOUBLE_EQ(m.p5, 0.5);
  EXPECT_DOUBLE_EQ(m.ndcg5, 0.5);
}

TEST(TopKMetrics, MissingPredictionsNeverHit) {
  const uint32_t top[5] = {4, UINT32_MAX, UINT32_MAX, UINT32_MAX, UINT32_MAX};
  const uint32_t labels[2] = {4, 5};
  TopKAccumulator acc;
  acc.AddRow(top, labels, 2);
  EXPECT_DOUBLE_EQ(acc.Mean().p3, 1.0 / 3);
  EXPECT_NEAR(acc.Mean().ndcg3, Gain(1) / (Gain(1) + Gain(2)), 1e-12);
}

// Propensity-scored metrics on a hand-worked row: labels {1, 3} with weights 2 and 4, ranked 1 then
// 3. PSP@1 = 2 / 4 (the best first label is 3); PSP@3 = (2 + 4) / (4 + 2) = 1; PSnDCG@3 =
// (2 + 4 g2) / (4 + 2 g2) with g2 = 1 / log2(3). A row without labels changes no ratio, and a
// merge of two halves equals one accumulator over both.
TEST(TopKMetrics, PropensityScoredMetricsOfAHandWorkedRow) {
  const float weights[6] = {1, 2, 3, 4, 5, 6};
  const uint32_t top[5] = {1, 3, 0, 2, 5};
  const uint32_t labels[2] = {1, 3};
  TopKAccumulator one, half, other;
  one.AddRow(top, labels, 2, weights, 6);
  one.AddRow(top, nullptr, 0, weights, 6);
  half.AddRow(top, labels, 2, weights, 6);
  other.AddRow(top, nullptr, 0, weights, 6);
  half.Merge(other);
  for (const TopKMetrics& m : {one.Mean(), half.Mean()}) {
    ASSERT_TRUE(m.propensity_scored);
    EXPECT_DOUBLE_EQ(m.psp1, 0.5);
    EXPECT_DOUBLE_EQ(m.psp3, 1.0);
    EXPECT_DOUBLE_EQ(m.psp5, 1.0);
    EXPECT_NEAR(m.psndcg3, (2 + 4 * Gain(2)) / (4 + 2 * Gain(2)), 1e-12);
    EXPECT_NEAR(m.psndcg5, (2 + 4 * Gain(2)) / (4 + 2 * Gain(2)), 1e-12);
    EXPECT_DOUBLE_EQ(m.p1, 0.5);  // the plain metrics are unchanged
  }
  TopKAccumulator plain;
  plain.AddRow(top, labels, 2);
  EXPECT_FALSE(plain.Mean().propensity_scored);
  EXPECT_EQ(plain.Mean().psp1, 0.0);
}

// w_l = 1 + C (N_l + B)^-A, C = (ln N - 1)(B + 1)^A, over the training rows' labels; a label no
// training row has gets N_l = 0.
TEST(Propensity, TheRepositorysFormulaFromTrainingLabelCounts) {
  data::CsrMatrix labels;
  labels.num_rows = 100;
  labels.num_cols = 3;
  std::vector<uint64_t> row_ptr(101);
  std::vector<uint32_t> col_idx;
  for (uint64_t r = 0; r < 100; ++r) {
    if (r < 50) col_idx.push_back(0);
    if (r < 5) col_idx.push_back(2);
    row_ptr[r + 1] = col_idx.size();
  }
  labels.row_ptr = data::SharedArray<uint64_t>(std::move(row_ptr));
  labels.col_idx = data::SharedArray<uint32_t>(std::move(col_idx));
  const std::vector<float> w = InversePropensities(labels, 4, {0.6, 2.6});
  ASSERT_EQ(w.size(), 4u);
  const double c = (std::log(100.0) - 1) * std::pow(3.6, 0.6);
  EXPECT_FLOAT_EQ(w[0], float(1 + c * std::pow(52.6, -0.6)));
  EXPECT_FLOAT_EQ(w[1], float(1 + c * std::pow(2.6, -0.6)));
  EXPECT_FLOAT_EQ(w[2], float(1 + c * std::pow(7.6, -0.6)));
  EXPECT_EQ(w[3], w[1]) << "a label beyond the training labels is one no row has";
  EXPECT_GT(w[1], w[2]);
  EXPECT_GT(w[2], w[0]);
  EXPECT_THROW(InversePropensities(labels, 3, {0, 1}), std::invalid_argument);
}

}  // namespace
}  // namespace xmlt::kernels
