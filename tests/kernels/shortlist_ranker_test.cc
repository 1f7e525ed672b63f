// Tests of the shortlist's re-ranking (kernels/ranker/shortlist_ranker.h); the blend's choice:
// tests/run/blend_choice_test.cc.
#include "kernels/ranker/shortlist_ranker.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "tests/make_dataset.h"

namespace xmlt::kernels {
namespace {

using testing::MakeDataset;

// A ranker of 4 features and 6 labels where feature f met labels f and f + 1, its weights w(f, l)
// = 10 f + l and its biases -l, so that a row's linear scores are known by hand.
ShortlistRanker HandRanker(uint32_t shortlist, float blend) {
  const data::Dataset rows = MakeDataset({{{{0, 1.0f}}, {0, 1}}, {{{1, 1.0f}}, {1, 2}}, {{{2, 1.0f}}, {2, 3}},
                                          {{{3, 1.0f}}, {3, 4}}},
                                         4, 6);
  ShortlistRanker ranker;
  ranker.linear = BuildLinearRanker(rows, 100);
  for (uint64_t f = 0; f < 4; ++f)
    for (uint64_t p = ranker.linear.feature_ptr[f]; p < ranker.linear.feature_ptr[f + 1]; ++p)
      ranker.linear.weight[p] = float(10 * f + ranker.linear.pair_label[p]);
  for (uint32_t l = 0; l < 6; ++l) ranker.linear.bias[l] = -float(l);
  ranker.shortlist = shortlist;
  ranker.blend = blend;
  return ranker;
}

float Sigmoid(float z) { return 1.0f / (1.0f + std::exp(-z)); }

TEST(ShortlistRanker, BlendScoreIsTheWeightedSigmoidAndProbability) {
  constexpr BlendForm kSum = BlendForm::kArithmetic, kProduct = BlendForm::kGeometric;
  EXPECT_FLOAT_EQ(BlendScore(kSum, 0.0f, 3.0f, 0.25f), 0.25f);
  EXPECT_FLOAT_EQ(BlendScore(kSum, 1.0f, 0.0f, 0.25f), 0.5f);
  EXPECT_FLOAT_EQ(BlendScore(kSum, 0.6f, 2.0f, 0.1f), 0.6f * Sigmoid(2.0f) + 0.4f * 0.1f);
  EXPECT_FLOAT_EQ(BlendScore(kProduct, 0.0f, 3.0f, 0.25f), 0.25f);
  EXPECT_FLOAT_EQ(BlendScore(kProduct, 1.0f, 0.0f, 0.25f), 0.5f);
  EXPECT_FLOAT_EQ(BlendScore(kProduct, 0.6f, 2.0f, 0.1f), std::pow(Sigmoid(2.0f), 0.6f) * std::pow(0.1f, 0.4f));
  EXPECT_EQ(BlendScore(kProduct, 0.5f, 2.0f, 0.0f), 0.0f) << "a probability of 0 stays last";
}

TEST(ShortlistRanker, RerankingOrdersTheShortlistByTheBlendAndKeepsTheRestInOrder) {
  // One row: feature 1 at 0.5. Linear scores: label 1: -1 + 0.5 x 11 = 4.5; label 2: -2 + 0.5 x 12
  // = 4; labels 0, 3: only their biases, 0 and -3.
  const data::Dataset row = MakeDataset({{{{1, 0.5f}}, {}}}, 4, 6);
  const std::vector<uint32_t> labels = {0, 3, 2, 1, 5};
  const std::vector<float> probabilities = {0.4f, 0.3f, 0.1f, 0.05f, 0.01f};
  std::vector<uint32_t> out_labels(5);
  std::vector<float> out_scores(5);
  RankerScratch scratch;
  // The ranker alone (a = 1) on a shortlist of 4: labels 1, 2, 0, 3 by score; label 5 stays last.
  RerankShortlist(HandRanker(4, 1.0f), row.features, 0, labels.data(), probabilities.data(), 5, out_labels.data(),
                  out_scores.data(), &scratch);
  EXPECT_EQ(out_labels, (std::vector<uint32_t>{1, 2, 0, 3, 5}));
  EXPECT_FLOAT_EQ(out_scores[0], Sigmoid(4.5f));
  EXPECT_FLOAT_EQ(out_scores[1], Sigmoid(4.0f));
  // Label 5, past the shortlist, takes the lowest linear score of the shortlist (label 3's -3),
  // not its own -5: the blend's scale, and no higher than the shortlist's last.
  EXPECT_FLOAT_EQ(out_scores[3], Sigmoid(-3.0f));
  EXPECT_FLOAT_EQ(out_scores[4], Sigmoid(-3.0f));
  // a = 0: the MLP's order and probabilities.
  RerankShortlist(HandRanker(4, 0.0f), row.features, 0, labels.data(), probabilities.data(), 5, out_labels.data(),
                  out_scores.data(), &scratch);
  EXPECT_EQ(out_labels, labels);
  EXPECT_EQ(out_scores, probabilities);
  // A shortlist of 2 re-ranks only labels 0 and 3: by the ranker 0 (bias 0) before 3 (bias -3).
  RerankShortlist(HandRanker(2, 1.0f), row.features, 0, labels.data(), probabilities.data(), 5, out_labels.data(),
                  out_scores.data(), &scratch);
  EXPECT_EQ(out_labels, (std::vector<uint32_t>{0, 3, 2, 1, 5}));
}

// A ranker of `num_labels` labels over 40 features, every label met by a few of them, weights
// drawn wide enough that the linear scores reorder the MLP's list.
ShortlistRanker RandomRanker(uint32_t num_labels, uint32_t shortlist, BlendForm form, float blend, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<testing::DatasetRow> rows(4 * num_labels);
  for (size_t r = 0; r < rows.size(); ++r) {
    rows[r].features = {{uint32_t(rng() % 20), 1.0f}, {20 + uint32_t(rng() % 20), 1.0f}};
    rows[r].labels = {uint32_t(r % num_labels)};
  }
  ShortlistRanker ranker;
  ranker.linear = BuildLinearRanker(MakeDataset(rows, 40, num_labels), 1u << 20);
  std::normal_distribution<float> normal(0.0f, 3.0f);
  for (float& w : ranker.linear.weight) w = normal(rng);
  for (float& b : ranker.linear.bias) b = normal(rng);
  ranker.shortlist = shortlist;
  ranker.form = form;
  ranker.blend = blend;
  return ranker;
}

// The MLP's whole list for a row: every label once, probabilities falling, softmax-like.
void MlpList(uint32_t num_labels, uint64_t seed, std::vector<uint32_t>* labels, std::vector<float>* probabilities) {
  std::mt19937_64 rng(seed);
  labels->resize(num_labels);
  std::iota(labels->begin(), labels->end(), 0u);
  std::shuffle(labels->begin(), labels->end(), rng);
  probabilities->resize(num_labels);
  float p = 0.3f;
  for (float& q : *probabilities) q = p *= 0.9f;
}

TEST(ShortlistRanker, EveryDepthIsRankedBestFirstWithScoresThatNeverRise) {
  // The default shortlist of 50 on 120 labels, at k = 50, 51, 100 and the label count, both forms.
  constexpr uint32_t kLabels = 120, kShortlist = 50;
  const data::Dataset rows = MakeDataset({{{{3, 0.6f}, {27, 0.8f}}, {}}, {{{11, 1.0f}, {35, 0.2f}}, {}}}, 40, kLabels);
  RankerScratch scratch;
  for (const BlendForm form : {BlendForm::kArithmetic, BlendForm::kGeometric})
    for (const float blend : {0.3f, 0.7f, 1.0f}) {
      const ShortlistRanker ranker = RandomRanker(kLabels, kShortlist, form, blend, 5);
      for (uint64_t row = 0; row < rows.num_rows(); ++row) {
        std::vector<uint32_t> mlp;
        std::vector<float> probabilities;
        MlpList(kLabels, 17 + row, &mlp, &probabilities);
        std::vector<float> linear(kShortlist);
        RankerScores(ranker.linear, rows.features, row, mlp.data(), kShortlist, linear.data(), &scratch);
        const float floor = *std::min_element(linear.begin(), linear.end());
        std::vector<uint32_t> whole(kLabels);
        std::vector<float> whole_scores(kLabels);
        RerankShortlist(ranker, rows.features, row, mlp.data(), probabilities.data(), kLabels, whole.data(),
                        whole_scores.data(), &scratch);
        for (const uint32_t k : {50u, 51u, 100u, kLabels}) {
          const std::string at = std::string(BlendFormName(form)) + " a=" + std::to_string(blend) + " row " +
                                 std::to_string(row) + " k=" + std::to_string(k);
          std::vector<uint32_t> out(k);
          std::vector<float> scores(k);
          RerankShortlist(ranker, rows.features, row, mlp.data(), probabilities.data(), k, out.data(), scores.data(),
                          &scratch);
          for (uint32_t i = 1; i < k; ++i) ASSERT_LE(scores[i], scores[i - 1]) << at << " place " << i;
          // The first k of the whole list, whatever k: one order for every depth.
          for (uint32_t i = 0; i < k; ++i) {
            ASSERT_EQ(out[i], whole[i]) << at << " place " << i;
            ASSERT_EQ(scores[i], whole_scores[i]) << at << " place " << i;
          }
          // The shortlist first (re-ordered), then the MLP's order, each scored as the blend with
          // the shortlist's lowest linear score.
          std::vector<uint32_t> head(out.begin(), out.begin() + kShortlist), mlp_head(mlp.begin(), mlp.begin() + kShortlist);
          std::sort(head.begin(), head.end());
          std::sort(mlp_head.begin(), mlp_head.end());
          ASSERT_EQ(head, mlp_head) << at;
          for (uint32_t i = kShortlist; i < k; ++i) {
            ASSERT_EQ(out[i], mlp[i]) << at << " place " << i;
            ASSERT_FLOAT_EQ(scores[i], BlendScore(form, blend, floor, probabilities[i])) << at << " place " << i;
          }
        }
        // The ranker does reorder this shortlist, or the test would prove little.
        EXPECT_FALSE(std::equal(mlp.begin(), mlp.begin() + kShortlist, whole.begin()));
      }
    }
}

TEST(ShortlistRanker, TiesKeepTheMlpsOrder) {
  // No feature: every score is the bias, all biases equal; a = 1 ties every label.
  ShortlistRanker ranker = HandRanker(5, 1.0f);
  for (float& b : ranker.linear.bias) b = 0.0f;
  const data::Dataset row = MakeDataset({{{}, {}}}, 4, 6);
  const std::vector<uint32_t> labels = {4, 1, 3, 0, 2};
  const std::vector<float> probabilities = {0.5f, 0.2f, 0.1f, 0.1f, 0.1f};
  std::vector<uint32_t> out(5);
  std::vector<float> scores(5);
  RankerScratch scratch;
  RerankShortlist(ranker, row.features, 0, labels.data(), probabilities.data(), 5, out.data(), scores.data(), &scratch);
  EXPECT_EQ(out, labels);
}

}  // namespace
}  // namespace xmlt::kernels
