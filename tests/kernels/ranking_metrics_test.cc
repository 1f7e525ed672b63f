// P@k and nDCG@k on rows worked out by hand.
#include <gtest/gtest.h>

#include <cmath>

#include "kernels/ranking_metrics.h"

namespace xmlt::kernels {
namespace {

double Gain(int rank) { return 1.0 / std::log2(rank + 1.0); }  // rank counted from 1

TEST(RankingMetrics, HandMadeRow) {
  // Predicted 7, 3, 9, 1, 4; true labels {1, 3, 8}: hits at ranks 2 and 4.
  const uint32_t top[5] = {7, 3, 9, 1, 4};
  const uint32_t labels[3] = {1, 3, 8};
  RankingAccumulator acc;
  acc.AddRow(top, labels, 3);
  const RankingMetrics m = acc.Mean();
  EXPECT_DOUBLE_EQ(m.p1, 0.0);
  EXPECT_DOUBLE_EQ(m.p3, 1.0 / 3);
  EXPECT_DOUBLE_EQ(m.p5, 2.0 / 5);
  EXPECT_NEAR(m.ndcg3, Gain(2) / (Gain(1) + Gain(2) + Gain(3)), 1e-12);
  EXPECT_NEAR(m.ndcg5, (Gain(2) + Gain(4)) / (Gain(1) + Gain(2) + Gain(3)), 1e-12);
}

TEST(RankingMetrics, SingleLabelIdealIsOneGainAndPerfectRowScoresOne) {
  const uint32_t top[5] = {2, 0, 1, 3, 4};
  const uint32_t one[1] = {2};
  RankingAccumulator acc;
  acc.AddRow(top, one, 1);
  RankingMetrics m = acc.Mean();
  EXPECT_DOUBLE_EQ(m.p1, 1.0);
  EXPECT_DOUBLE_EQ(m.p5, 0.2);
  EXPECT_DOUBLE_EQ(m.ndcg3, 1.0);
  EXPECT_DOUBLE_EQ(m.ndcg5, 1.0);
}

TEST(RankingMetrics, RowsWithoutLabelsCountAsZeroAndMergeAverages) {
  const uint32_t top[5] = {0, 1, 2, 3, 4};
  const uint32_t all[5] = {0, 1, 2, 3, 4};
  RankingAccumulator a, b;
  a.AddRow(top, all, 5);
  b.AddRow(top, nullptr, 0);
  a.Merge(b);
  const RankingMetrics m = a.Mean();
  EXPECT_EQ(a.rows(), 2u);
  EXPECT_DOUBLE_EQ(m.p1, 0.5);
  EXPECT_DOUBLE_EQ(m.p5, 0.5);
  EXPECT_DOUBLE_EQ(m.ndcg5, 0.5);
}

TEST(RankingMetrics, MissingPredictionsNeverHit) {
  const uint32_t top[5] = {4, UINT32_MAX, UINT32_MAX, UINT32_MAX, UINT32_MAX};
  const uint32_t labels[2] = {4, 5};
  RankingAccumulator acc;
  acc.AddRow(top, labels, 2);
  EXPECT_DOUBLE_EQ(acc.Mean().p3, 1.0 / 3);
  EXPECT_NEAR(acc.Mean().ndcg3, Gain(1) / (Gain(1) + Gain(2)), 1e-12);
}

}  // namespace
}  // namespace xmlt::kernels
