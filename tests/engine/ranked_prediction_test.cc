// Tests of prediction and evaluation with a shortlist ranker (engine/evaluator.h): the MLP's top
// list re-ranked as kernels::RerankShortlist says, the metrics those of the re-ranked list.
#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "engine/evaluator.h"
#include "kernels/ranker/linear_ranker.h"
#include "tests/make_dataset.h"

namespace xmlt::engine {
namespace {

data::Dataset RandomRows(uint32_t rows, uint32_t features, uint32_t labels, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<testing::DatasetRow> out(rows);
  for (testing::DatasetRow& row : out) {
    const uint32_t a = uint32_t(rng() % features), b = uint32_t(rng() % features);
    row.features = {{std::min(a, b), 0.7f}};
    if (a != b) row.features.push_back({std::max(a, b), 0.7f});
    row.labels = {uint32_t(rng() % labels)};
  }
  return testing::MakeDataset(out, features, labels);
}

TrainedModel RankedModel(const data::Dataset& train, uint32_t shortlist, float blend) {
  kernels::ModelShape shape;
  shape.num_features = train.num_features();
  shape.num_labels = train.num_labels();
  shape.hidden = {6};
  TrainedModel model;
  model.mlp = kernels::InitModel<float>(shape, 4);
  auto ranker = std::make_shared<kernels::ShortlistRanker>();
  ranker->linear = kernels::BuildLinearRanker(train, 100000);
  std::mt19937_64 rng(9);
  std::normal_distribution<float> normal(0.0f, 2.0f);
  for (float& w : ranker->linear.weight) w = normal(rng);
  ranker->shortlist = shortlist;
  ranker->blend = blend;
  model.ranker = ranker;
  return model;
}

TEST(RankedPrediction, TheTopListIsTheMlpsShortlistReRanked) {
  const data::Dataset rows = RandomRows(50, 30, 25, 1);
  const TrainedModel model = RankedModel(rows, 12, 0.7f);
  const Prediction mlp = Predict(model.mlp, rows, 12);
  const Prediction ranked = Predict(model, rows, 4);
  ASSERT_EQ(ranked.k, 4u);
  kernels::RankerScratch scratch;
  for (uint64_t r = 0; r < rows.num_rows(); ++r) {
    std::vector<uint32_t> labels(12);
    std::vector<float> scores(12);
    kernels::RerankShortlist(*model.ranker, rows.features, r, mlp.labels.data() + r * 12, mlp.scores.data() + r * 12,
                             12, labels.data(), scores.data(), &scratch);
    for (uint32_t i = 0; i < 4; ++i) {
      EXPECT_EQ(ranked.labels[r * 4 + i], labels[i]) << "row " << r << " place " << i;
      EXPECT_FLOAT_EQ(ranked.scores[r * 4 + i], scores[i]);
    }
  }
  // The first k do not depend on k: the whole shortlist is re-ranked either way.
  const Prediction longer = Predict(model, rows, 8);
  for (uint64_t r = 0; r < rows.num_rows(); ++r)
    for (uint32_t i = 0; i < 4; ++i) EXPECT_EQ(longer.labels[r * 8 + i], ranked.labels[r * 4 + i]);
}

TEST(RankedPrediction, EveryKIsRankedBestFirstWithScoresThatNeverRise) {
  // The default shortlist of 50 on 120 labels: k = 50, 51, 100 and the label count.
  const data::Dataset rows = RandomRows(40, 30, 120, 4);
  for (const float blend : {0.5f, 1.0f}) {
    const TrainedModel model = RankedModel(rows, 50, blend);
    const Prediction whole = Predict(model, rows, 120);
    const Prediction mlp = Predict(model.mlp, rows, 120);
    for (const uint32_t k : {50u, 51u, 100u, 120u}) {
      const Prediction p = Predict(model, rows, k);
      ASSERT_EQ(p.k, k);
      for (uint64_t r = 0; r < rows.num_rows(); ++r) {
        const std::string at = "a=" + std::to_string(blend) + " k=" + std::to_string(k) + " row " + std::to_string(r);
        for (uint32_t i = 1; i < k; ++i) ASSERT_LE(p.scores[r * k + i], p.scores[r * k + i - 1]) << at << " place " << i;
        for (uint32_t i = 0; i < k; ++i) {
          ASSERT_EQ(p.labels[r * k + i], whole.labels[r * 120 + i]) << at << " place " << i;
          ASSERT_EQ(p.scores[r * k + i], whole.scores[r * 120 + i]) << at << " place " << i;
        }
        // Past the shortlist, the MLP's order.
        for (uint32_t i = 50; i < k; ++i) ASSERT_EQ(p.labels[r * k + i], mlp.labels[r * 120 + i]) << at << " place " << i;
      }
    }
  }
}

TEST(RankedPrediction, ABlendOfZeroPredictsAsTheMlp) {
  const data::Dataset rows = RandomRows(40, 30, 25, 2);
  const TrainedModel model = RankedModel(rows, 10, 0.0f);
  const Prediction mlp = Predict(model.mlp, rows, 5);
  const Prediction ranked = Predict(model, rows, 5);
  EXPECT_EQ(ranked.labels, mlp.labels);
  EXPECT_EQ(ranked.scores, mlp.scores);
}

TEST(RankedPrediction, TheEvaluationScoresTheReRankedListAndTheMlpsLoss) {
  data::Dataset rows = RandomRows(60, 30, 25, 3);
  const TrainedModel model = RankedModel(rows, 10, 1.0f);
  const Prediction ranked = Predict(model, rows, 5);
  kernels::TopKAccumulator expected;
  for (uint64_t r = 0; r < rows.num_rows(); ++r)
    expected.AddRow(ranked.labels.data() + r * 5, rows.labels.col_idx.data() + rows.labels.RowBegin(r),
                    uint32_t(rows.labels.RowSize(r)));
  const Evaluation e = Evaluate(model, rows);
  EXPECT_DOUBLE_EQ(e.metrics.p1, expected.Mean().p1);
  EXPECT_DOUBLE_EQ(e.metrics.p3, expected.Mean().p3);
  EXPECT_DOUBLE_EQ(e.metrics.ndcg5, expected.Mean().ndcg5);
  EXPECT_DOUBLE_EQ(e.loss, Evaluate(model.mlp, rows).loss);
  EXPECT_EQ(e.rows, 60u);
  // The ranker changes the order here, or this test would prove nothing.
  EXPECT_NE(ranked.labels, Predict(model.mlp, rows, 5).labels);
}

}  // namespace
}  // namespace xmlt::engine
