// Tests of evaluation and prediction on hand-built models whose outputs are known in closed form:
// P@k, nDCG@k and loss against values computed here, unlabeled rows, ids beyond the model, and the
// probabilities Predict returns.
#include "engine/evaluator.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>
#include <set>
#include <utility>
#include <vector>

#include "data/dataset.h"
#include "kernels/cpu/softmax_loss.h"
#include "kernels/cpu/sparse_mlp.h"
#include "kernels/cpu/top_k.h"
#include "kernels/model.h"
#include "tests/make_dataset.h"

namespace xmlt::engine {
namespace {

using kernels::Model;
using kernels::ModelShape;

using Row = testing::DatasetRow;
using testing::MakeDataset;

// A model whose hidden layer is always zero, so every row's logits equal the output bias.
Model<float> BiasOnlyModel(uint64_t features, const std::vector<float>& output_bias) {
  ModelShape shape;
  shape.num_features = features;
  shape.hidden = {3};
  shape.num_labels = output_bias.size();
  shape.normalize_rows = false;
  Model<float> model = kernels::ZeroModel<float>(shape);
  std::copy(output_bias.begin(), output_bias.end(), model.Bias(1));
  return model;
}

double LogSoftmax(const std::vector<float>& z, uint32_t j) {
  double sum = 0;
  for (float v : z) sum += std::exp(double(v));
  return double(z[j]) - std::log(sum);
}

double Gain(int rank) { return 1.0 / std::log2(double(rank) + 1.0); }  // rank starts at 1

// Output bias order: label 1 (2.0), 3 (1.0), 0 (0.5), 4 (0.0), 2 (-1.0).
const std::vector<float> kBias = {0.5f, 2.0f, -1.0f, 1.0f, 0.0f};

TEST(EvaluatorTest, MetricsAndLossMatchHandComputedValues) {
  const std::vector<Row> rows = {
      {{{0, 1.0f}, {2, 0.5f}}, {1}},  // hit at rank 1
      {{{1, 2.0f}}, {0, 2}},          // hits at ranks 3 and 5
      {{{3, 1.0f}}, {}},              // no labels: zero on every metric, no loss
      {{{0, 1.0f}, {3, 1.0f}}, {3}},  // hit at rank 2
  };
  const Evaluation e = Evaluate(BiasOnlyModel(4, kBias), MakeDataset(rows, 4, 5));
  EXPECT_EQ(e.rows, 4u);
  const double n = 4;
  EXPECT_NEAR(e.metrics.p1, 1.0 / n, 1e-12);
  EXPECT_NEAR(e.metrics.p3, (1.0 / 3 + 1.0 / 3 + 0 + 1.0 / 3) / n, 1e-12);
  EXPECT_NEAR(e.metrics.p5, (1.0 / 5 + 2.0 / 5 + 0 + 1.0 / 5) / n, 1e-12);
  const double ndcg3_row1 = Gain(3) / (Gain(1) + Gain(2));
  const double ndcg5_row1 = (Gain(3) + Gain(5)) / (Gain(1) + Gain(2));
  EXPECT_NEAR(e.metrics.ndcg3, (1.0 + ndcg3_row1 + 0 + Gain(2)) / n, 1e-12);
  EXPECT_NEAR(e.metrics.ndcg5, (1.0 + ndcg5_row1 + 0 + Gain(2)) / n, 1e-12);
  // Loss: mean over the three labeled rows of -(1/|Y|) sum log p_y.
  const double loss = (-LogSoftmax(kBias, 1) - 0.5 * (LogSoftmax(kBias, 0) + LogSoftmax(kBias, 2)) -
                       LogSoftmax(kBias, 3)) /
                      3;
  EXPECT_NEAR(e.loss, loss, 1e-5);
}

TEST(EvaluatorTest, RowsWithoutLabelsCountAsZeroHits) {
  const std::vector<Row> labeled = {{{{0, 1.0f}}, {1}}};
  const std::vector<Row> half = {{{{0, 1.0f}}, {1}}, {{{0, 1.0f}}, {}}};
  const Model<float> model = BiasOnlyModel(4, kBias);
  const Evaluation a = Evaluate(model, MakeDataset(labeled, 4, 5));
  const Evaluation b = Evaluate(model, MakeDataset(half, 4, 5));
  EXPECT_DOUBLE_EQ(a.metrics.p1, 1.0);
  EXPECT_DOUBLE_EQ(b.metrics.p1, 0.5);
  EXPECT_DOUBLE_EQ(b.metrics.ndcg5, 0.5);
  EXPECT_NEAR(a.loss, b.loss, 1e-7);  // the unlabeled row adds no loss and no denominator

  const Evaluation none = Evaluate(model, MakeDataset({{{{0, 1.0f}}, {}}}, 4, 5));
  EXPECT_EQ(none.metrics.p1, 0.0);
  EXPECT_EQ(none.loss, 0.0);
}

// A model with real hidden weights, evaluated against a forward pass written out here:
// h = relu(x W0 + b0), z = W1 h + b1 (W1 stored a row per label).
TEST(EvaluatorTest, LossFollowsTheForwardPassThroughTheHiddenLayer) {
  ModelShape shape;
  shape.num_features = 3;
  shape.hidden = {2};
  shape.num_labels = 3;
  shape.normalize_rows = false;
  Model<float> model = kernels::ZeroModel<float>(shape);
  const float w0[3][2] = {{1.0f, -1.0f}, {0.5f, 2.0f}, {-2.0f, 0.25f}};
  const float b0[2] = {0.1f, -0.2f};
  const float w1[3][2] = {{1.0f, 0.0f}, {-1.0f, 1.5f}, {0.5f, 0.5f}};
  const float b1[3] = {0.0f, 0.3f, -0.1f};
  std::copy(&w0[0][0], &w0[0][0] + 6, model.Weight(0));
  std::copy(b0, b0 + 2, model.Bias(0));
  std::copy(&w1[0][0], &w1[0][0] + 6, model.Weight(1));
  std::copy(b1, b1 + 3, model.Bias(1));

  const std::vector<Row> rows = {
      {{{0, 1.0f}, {1, 0.5f}}, {1}}, {{{2, 1.0f}}, {0, 2}}, {{{0, 2.0f}, {2, 0.5f}}, {0}}};
  double loss = 0;
  double p1 = 0;
  for (const Row& row : rows) {
    double h[2] = {b0[0], b0[1]};
    for (const auto& [f, v] : row.features)
      for (int u = 0; u < 2; ++u) h[u] += v * w0[f][u];
    for (double& x : h) x = std::max(x, 0.0);
    std::vector<float> z(3);
    for (int j = 0; j < 3; ++j) z[j] = float(w1[j][0] * h[0] + w1[j][1] * h[1] + b1[j]);
    double row_loss = 0;
    for (uint32_t y : row.labels) row_loss -= LogSoftmax(z, y);
    loss += row_loss / double(row.labels.size());
    const uint32_t best = uint32_t(std::max_element(z.begin(), z.end()) - z.begin());
    p1 += std::binary_search(row.labels.begin(), row.labels.end(), best) ? 1 : 0;
  }
  const Evaluation e = Evaluate(model, MakeDataset(rows, 3, 3));
  EXPECT_NEAR(e.loss, loss / 3, 1e-5);
  EXPECT_NEAR(e.metrics.p1, p1 / 3, 1e-12);
  // With only three labels the 4th and 5th places are empty and can never hit.
  EXPECT_LE(e.metrics.p5, 3.0 / 5);
}

TEST(EvaluatorTest, IdsBeyondTheModelAreClippedNotFatal) {
  // Features 4..9 and labels 5..7 exist only in the test file. Clipping must give exactly the
  // result of the same rows without those ids, except that labels the model cannot predict are
  // never hits.
  ModelShape shape;
  shape.num_features = 4;
  shape.hidden = {3};
  shape.num_labels = 5;
  shape.normalize_rows = false;
  Model<float> model = kernels::InitModel<float>(shape, 5);
  std::copy(kBias.begin(), kBias.end(), model.Bias(1));

  const std::vector<Row> wide = {
      {{{0, 1.0f}, {7, 3.0f}, {9, 1.0f}}, {1, 6}},
      {{{2, 0.5f}, {3, 1.0f}}, {7}},  // only an unpredictable label
      {{{5, 1.0f}}, {0}},             // only unknown features
      {{{1, 1.0f}, {2, 2.0f}}, {3}},
  };
  const std::vector<Row> narrow = {
      {{{0, 1.0f}}, {1}},
      {{{2, 0.5f}, {3, 1.0f}}, {}},
      {{}, {0}},
      {{{1, 1.0f}, {2, 2.0f}}, {3}},
  };
  const Evaluation a = Evaluate(model, MakeDataset(wide, 10, 8));
  const Evaluation b = Evaluate(model, MakeDataset(narrow, 4, 5));
  EXPECT_EQ(a.rows, 4u);
  EXPECT_DOUBLE_EQ(a.metrics.p1, b.metrics.p1);
  EXPECT_DOUBLE_EQ(a.metrics.p3, b.metrics.p3);
  EXPECT_DOUBLE_EQ(a.metrics.p5, b.metrics.p5);
  EXPECT_GT(a.metrics.p5, 0.0);
  EXPECT_NEAR(a.loss, b.loss, 1e-6);
  // Labels the model cannot predict still belong to the row: they raise the ideal DCG.
  EXPECT_LT(a.metrics.ndcg5, b.metrics.ndcg5);

  const Prediction pa = Predict(model, MakeDataset(wide, 10, 8), 5);
  const Prediction pb = Predict(model, MakeDataset(narrow, 4, 5), 5);
  EXPECT_EQ(pa.labels, pb.labels);
  EXPECT_EQ(pa.scores, pb.scores);
  for (uint32_t label : pa.labels) EXPECT_LT(label, 5u);
}

TEST(EvaluatorTest, ManyChunksGiveThePerRowResult) {
  // More rows than one forward chunk (1024), so chunk offsets matter; every row alike.
  std::vector<Row> rows(2500, Row{{{0, 1.0f}}, {3}});
  rows[2499].labels = {1};
  const Model<float> model = BiasOnlyModel(4, kBias);
  const Evaluation e = Evaluate(model, MakeDataset(rows, 4, 5));
  EXPECT_EQ(e.rows, 2500u);
  EXPECT_NEAR(e.metrics.p1, 1.0 / 2500, 1e-12);
  EXPECT_NEAR(e.metrics.p3, 1.0 / 3, 1e-12);
  const Prediction p = Predict(model, MakeDataset(rows, 4, 5), 2);
  ASSERT_EQ(p.labels.size(), 5000u);
  for (size_t r = 0; r < 2500; ++r) {
    ASSERT_EQ(p.labels[2 * r], 1u) << "row " << r;
    ASSERT_EQ(p.labels[2 * r + 1], 3u) << "row " << r;
  }
}

TEST(EvaluatorTest, EmptyDatasetGivesZeros) {
  const Evaluation e = Evaluate(BiasOnlyModel(4, kBias), MakeDataset({}, 4, 5));
  EXPECT_EQ(e.rows, 0u);
  EXPECT_EQ(e.metrics.p1, 0.0);
  EXPECT_EQ(e.loss, 0.0);
  const Prediction p = Predict(BiasOnlyModel(4, kBias), MakeDataset({}, 4, 5), 3);
  EXPECT_TRUE(p.labels.empty());
}

TEST(EvaluatorTest, PredictGivesTheSoftmaxOfTheBias) {
  const Prediction p = Predict(BiasOnlyModel(4, kBias), MakeDataset({{{{1, 1.0f}}, {}}}, 4, 5), 3);
  EXPECT_EQ(p.k, 3u);
  EXPECT_EQ(p.labels, (std::vector<uint32_t>{1, 3, 0}));
  ASSERT_EQ(p.scores.size(), 3u);
  EXPECT_NEAR(p.scores[0], std::exp(LogSoftmax(kBias, 1)), 1e-6);
  EXPECT_NEAR(p.scores[1], std::exp(LogSoftmax(kBias, 3)), 1e-6);
  EXPECT_NEAR(p.scores[2], std::exp(LogSoftmax(kBias, 0)), 1e-6);
}

TEST(EvaluatorTest, PredictWithAllLabelsIsADescendingDistribution) {
  ModelShape shape;
  shape.num_features = 30;
  shape.hidden = {8};
  shape.num_labels = 17;
  shape.normalize_rows = false;
  Model<float> model = kernels::InitModel<float>(shape, 3);
  std::mt19937 rng(4);
  std::normal_distribution<float> normal(0.0f, 0.5f);
  for (float& p : model.params) p += normal(rng);  // spread the outputs out, within float range
  std::vector<Row> rows;
  for (int r = 0; r < 40; ++r) {
    Row row;
    for (uint32_t f = uint32_t(r % 3); f < 30; f += 3 + uint32_t(r % 5))
      row.features.push_back({f, 1.0f});
    row.labels = {uint32_t(r % 17)};
    rows.push_back(row);
  }
  rows[7].features.clear();  // a row without features still gets a distribution (the biases')
  const uint32_t k = 17;
  const Prediction p = Predict(model, MakeDataset(rows, 30, 17), k);
  ASSERT_EQ(p.labels.size(), rows.size() * k);
  for (size_t r = 0; r < rows.size(); ++r) {
    SCOPED_TRACE("row " + std::to_string(r));
    const float* s = p.scores.data() + r * k;
    const uint32_t* l = p.labels.data() + r * k;
    double sum = 0;
    for (uint32_t i = 0; i < k; ++i) {
      EXPECT_GT(s[i], 0.0f);
      EXPECT_LE(s[i], 1.0f);
      if (i > 0) {
        EXPECT_GE(s[i - 1], s[i]);
      }
      sum += s[i];
    }
    EXPECT_NEAR(sum, 1.0, 1e-5);
    EXPECT_EQ(std::set<uint32_t>(l, l + k).size(), k);
    EXPECT_LT(*std::max_element(l, l + k), k);
  }
}

TEST(EvalSample, FixedSortedDistinctAndSeeded) {
  const std::vector<uint64_t> a = SampleEvalRows(1001, 97, 5), b = SampleEvalRows(1001, 97, 5);
  EXPECT_EQ(a, b);
  ASSERT_EQ(a.size(), 97u);
  EXPECT_TRUE(std::is_sorted(a.begin(), a.end()));
  EXPECT_EQ(std::set<uint64_t>(a.begin(), a.end()).size(), 97u);
  EXPECT_LT(a.back(), 1001u);
  EXPECT_NE(a, SampleEvalRows(1001, 97, 6));
  // Spread over the file, not its head: the mean id is near the middle.
  const double mean = std::accumulate(a.begin(), a.end(), 0.0) / double(a.size());
  EXPECT_NEAR(mean, 500, 120);
  std::vector<uint64_t> all(10);
  std::iota(all.begin(), all.end(), uint64_t{0});
  EXPECT_EQ(SampleEvalRows(10, 0, 5), all);
  EXPECT_EQ(SampleEvalRows(10, 10, 5), all);
  EXPECT_EQ(SampleEvalRows(10, 11, 5), all);
}

// Scoring a test set in uneven parts and adding the sums gives the whole set's evaluation.
TEST(EvaluationSums, PartsAddUpToTheWhole) {
  std::mt19937_64 rng(9);
  std::vector<Row> rows;
  for (int r = 0; r < 53; ++r) {
    Row row;
    for (uint32_t f = 0; f < 12; ++f)
      if (rng() % 3 == 0) row.features.push_back({f, float(rng() % 100) / 50.0f});
    for (uint32_t y = 0; y < 9; ++y)
      if (rng() % 4 == 0) row.labels.push_back(y);
    rows.push_back(row);
  }
  const data::Dataset test = MakeDataset(rows, 12, 9);
  const Model<float> model = kernels::InitModel<float>(ModelShape{12, {5}, 9}, 4);
  const Evaluation whole = Evaluate(model, test);
  std::vector<uint64_t> ids(53);
  std::iota(ids.begin(), ids.end(), uint64_t{0});
  EvaluationSums sums;
  for (auto [begin, end] : {std::pair<size_t, size_t>{0, 17}, {17, 18}, {18, 53}})
    sums.Add(EvaluateRows(model, test, ids.data() + begin, end - begin));
  const Evaluation parts = sums.Mean();
  EXPECT_EQ(parts.rows, 53u);
  EXPECT_NEAR(parts.metrics.p1, whole.metrics.p1, 1e-12);
  EXPECT_NEAR(parts.metrics.p5, whole.metrics.p5, 1e-12);
  EXPECT_NEAR(parts.metrics.ndcg5, whole.metrics.ndcg5, 1e-12);
  EXPECT_NEAR(parts.loss, whole.loss, 1e-9);
  // A sample is scored on its own rows only.
  const std::vector<uint64_t> sample = SampleEvalRows(53, 20, 1);
  std::vector<Row> picked;
  for (uint64_t r : sample) picked.push_back(rows[r]);
  const Evaluation direct = Evaluate(model, MakeDataset(picked, 12, 9));
  const Evaluation sampled = EvaluateRows(model, test, sample.data(), sample.size()).Mean();
  EXPECT_EQ(sampled.rows, 20u);
  EXPECT_NEAR(sampled.metrics.p3, direct.metrics.p3, 1e-12);
  EXPECT_NEAR(sampled.loss, direct.loss, 1e-9);
}

// A device scoring its own chunks (the GPU's evaluation) sees no chunk beyond its bounds and no
// id beyond the model, a row too large for it alone is scored on the CPU, and the sums are the
// CPU evaluator's. The device here is the CPU's forward pass, so the results agree to rounding.
TEST(EvaluateRowsInChunks, ChunksWithinTheBoundsAddUpToTheCpuEvaluation) {
  std::mt19937_64 rng(21);
  std::vector<Row> rows;
  for (int r = 0; r < 61; ++r) {
    Row row;
    const uint32_t features = r == 17 ? 40 : 1 + uint32_t(rng() % 6);  // row 17: too large alone
    for (uint32_t f = 0; f < 44 && row.features.size() < features; ++f)
      if (r == 17 || rng() % 5 == 0) row.features.push_back({f, float(1 + rng() % 100) / 50.0f});
    for (uint32_t y = 0; y < 11; ++y)
      if (rng() % 4 == 0) row.labels.push_back(y);
    rows.push_back(row);
  }
  const data::Dataset test = MakeDataset(rows, 44, 11);  // 4 features and 2 labels beyond the model
  const Model<float> model = kernels::InitModel<float>(ModelShape{40, {6}, 9}, 3);
  std::vector<uint64_t> ids;
  for (uint64_t r = 61; r-- > 0;)
    if (r % 4 != 2) ids.push_back(r);  // any order, some rows left out

  constexpr uint32_t kMaxRows = 7;
  constexpr uint64_t kMaxFeatures = 16, kMaxLabels = 12;
  uint64_t scored_rows = 0;
  const ScoreBatch device = [&](const data::SparseBatch& batch, uint32_t k, uint32_t* top, double* loss_sum,
                                uint32_t* labeled) {
    EXPECT_GE(batch.num_rows, 1u);
    EXPECT_LE(batch.num_rows, kMaxRows);
    EXPECT_LE(batch.feature_idx.size(), kMaxFeatures);
    EXPECT_LE(batch.label_idx.size(), kMaxLabels);
    for (uint32_t f : batch.feature_idx) EXPECT_LT(f, 40u);
    for (uint32_t y : batch.label_idx) EXPECT_LT(y, 9u);
    scored_rows += batch.num_rows;
    kernels::cpu::MlpWorkspace<float> workspace(model.shape, batch.num_rows);
    kernels::cpu::Forward(model, batch, &workspace);
    const kernels::cpu::LossResult loss =
        kernels::cpu::SoftmaxCrossEntropy(workspace.logits.data(), batch, model.shape.num_labels);
    *loss_sum = loss.loss_sum;
    *labeled = loss.labeled_rows;
    kernels::cpu::TopK<float>(workspace.logits.data(), batch.num_rows, model.shape.num_labels, k, top, nullptr);
  };
  const EvaluationSums chunked =
      EvaluateRowsInChunks(model, test, ids.data(), ids.size(), kMaxRows, kMaxFeatures, kMaxLabels, device);
  const EvaluationSums whole = EvaluateRows(model, test, ids.data(), ids.size());
  EXPECT_EQ(scored_rows, ids.size() - 1) << "row 17 alone is beyond the bounds";
  EXPECT_EQ(chunked.ranking.rows(), ids.size());
  EXPECT_EQ(chunked.labeled_rows, whole.labeled_rows);
  EXPECT_NEAR(chunked.loss_sum, whole.loss_sum, 1e-9 * std::abs(whole.loss_sum));
  const kernels::TopKMetrics a = chunked.ranking.Mean(), b = whole.ranking.Mean();
  EXPECT_NEAR(a.p1, b.p1, 1e-12);
  EXPECT_NEAR(a.p3, b.p3, 1e-12);
  EXPECT_NEAR(a.p5, b.p5, 1e-12);
  EXPECT_NEAR(a.ndcg3, b.ndcg3, 1e-12);
  EXPECT_NEAR(a.ndcg5, b.ndcg5, 1e-12);
  EXPECT_GT(a.p1, 0.0);
}

}  // namespace
}  // namespace xmlt::engine
