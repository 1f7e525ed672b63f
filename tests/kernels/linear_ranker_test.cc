// The linear ranker over the MLP's shortlist: its pairs, its candidates, and scores against a
// dense reference (its training: linear_ranker_dual_test.cc).
#include "kernels/ranker/linear_ranker.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <set>
#include <stdexcept>
#include <utility>
#include <vector>

#include "tests/make_dataset.h"

namespace xmlt::kernels {
namespace {

using testing::DatasetRow;
using testing::MakeDataset;

// Rows of 1..6 distinct features and 1..4 distinct labels (some rows without labels).
data::Dataset RandomDataset(uint32_t rows, uint32_t features, uint32_t labels, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<DatasetRow> out(rows);
  for (DatasetRow& row : out) {
    std::set<uint32_t> f, l;
    const uint32_t nf = 1 + uint32_t(rng() % 6), nl = uint32_t(rng() % 5);
    while (f.size() < std::min(nf, features)) f.insert(uint32_t(rng() % features));
    while (l.size() < std::min(nl, labels)) l.insert(uint32_t(rng() % labels));
    for (uint32_t id : f) row.features.push_back({id, 0.1f + float(rng() % 90) / 100.0f});
    row.labels.assign(l.begin(), l.end());
  }
  return MakeDataset(out, features, labels);
}

// The pairs every row makes, by brute force.
std::set<std::pair<uint64_t, uint32_t>> PairsOf(const data::Dataset& d) {
  std::set<std::pair<uint64_t, uint32_t>> pairs;
  for (uint64_t r = 0; r < d.num_rows(); ++r)
    for (uint64_t i = d.features.RowBegin(r); i < d.features.RowEnd(r); ++i)
      for (uint64_t j = d.labels.RowBegin(r); j < d.labels.RowEnd(r); ++j)
        pairs.insert({d.features.col_idx[i], d.labels.col_idx[j]});
  return pairs;
}

TEST(LinearRanker, HoldsExactlyThePairsThatShareARowSortedByFeature) {
  const data::Dataset d = RandomDataset(200, 37, 23, 1);
  const LinearRanker ranker = BuildLinearRanker(d, UINT64_MAX);
  const auto expected = PairsOf(d);
  std::set<std::pair<uint64_t, uint32_t>> held;
  for (uint64_t f = 0; f < ranker.num_features; ++f) {
    ASSERT_TRUE(std::is_sorted(ranker.pair_label.begin() + int64_t(ranker.feature_ptr[f]),
                               ranker.pair_label.begin() + int64_t(ranker.feature_ptr[f + 1])));
    for (uint64_t p = ranker.feature_ptr[f]; p < ranker.feature_ptr[f + 1]; ++p) {
      held.insert({f, ranker.pair_label[p]});
      EXPECT_EQ(ranker.PairOf(f, ranker.pair_label[p]), int64_t(p));
    }
  }
  EXPECT_EQ(held, expected);
  EXPECT_EQ(ranker.num_pairs(), expected.size());
  EXPECT_EQ(ranker.weight.size(), expected.size());
  EXPECT_EQ(ranker.bias, std::vector<float>(23, 0.0f));
  EXPECT_EQ(ranker.weight, std::vector<float>(expected.size(), 0.0f));
  // Pairs that never met, and features beyond the ranker, have none.
  for (uint64_t f = 0; f < 37; ++f)
    for (uint32_t l = 0; l < 23; ++l) {
      if (!expected.count({f, l})) {
        EXPECT_EQ(ranker.PairOf(f, l), -1);
      }
    }
  EXPECT_EQ(ranker.PairOf(37, 0), -1);
}

TEST(LinearRanker, RefusesMorePairsThanTheLimitBeforeAllocatingThem) {
  const data::Dataset d = RandomDataset(50, 11, 7, 2);
  const uint64_t pairs = PairsOf(d).size();
  EXPECT_EQ(BuildLinearRanker(d, pairs).num_pairs(), pairs);
  try {
    BuildLinearRanker(d, pairs - 1);
    FAIL() << "no error past the limit";
  } catch (const std::length_error& e) {
    EXPECT_NE(std::string(e.what()).find(std::to_string(pairs) + " (feature, label) pairs"), std::string::npos)
        << e.what();
  }
}

TEST(LinearRanker, CandidatesAreTheRowsLabelsThenTheShortlistsOthersOnce) {
  const data::Dataset d = MakeDataset({{{{0, 1.0f}}, {2, 5}}}, 1, 8);
  const uint32_t shortlist[] = {5, 7, 1, 7, 9, 2, 0};  // 9 is beyond the labels
  const RankerCandidates c = CandidatesOf(d.labels, 0, shortlist, 7, 8);
  EXPECT_EQ(c.labels, (std::vector<uint32_t>{2, 5, 7, 1, 0}));
  EXPECT_EQ(c.positive, (std::vector<uint8_t>{1, 1, 0, 0, 0}));
}

// A trained ranker's scores equal a dense features x labels table holding its pairs' weights.
TEST(LinearRanker, ScoresMatchADenseTableOfItsPairs) {
  const data::Dataset d = RandomDataset(300, 41, 29, 3);
  LinearRanker ranker = BuildLinearRanker(d, UINT64_MAX);
  std::mt19937_64 rng(4);
  for (float& w : ranker.weight) w = float(int(rng() % 200) - 100) / 50.0f;
  for (float& b : ranker.bias) b = float(int(rng() % 200) - 100) / 100.0f;
  std::vector<double> dense(41 * 29, 0.0);
  for (uint64_t f = 0; f < 41; ++f)
    for (uint64_t p = ranker.feature_ptr[f]; p < ranker.feature_ptr[f + 1]; ++p)
      dense[f * 29 + ranker.pair_label[p]] = ranker.weight[p];
  std::vector<uint32_t> labels(29);
  for (uint32_t l = 0; l < 29; ++l) labels[l] = l;
  std::vector<float> scores(29);
  RankerScratch scratch;
  uint64_t searched = 0;  // features scored by a binary search per candidate, not a scan
  for (uint64_t r = 0; r < d.num_rows(); ++r) {
    auto expected = [&](uint32_t l) {
      double sum = ranker.bias[l];
      for (uint64_t i = d.features.RowBegin(r); i < d.features.RowEnd(r); ++i)
        sum += double(d.features.values[i]) * dense[d.features.col_idx[i] * 29 + l];
      return sum;
    };
    // Every label at once (each feature's labels scanned); one at a time (a scan of the one label's
    // part of each list); each with label 28 (a feature that met more than 24 labels from the
    // first to label 28 is searched, two labels being asked).
    RankerScores(ranker, d.features, r, labels.data(), labels.size(), scores.data(), &scratch);
    for (uint32_t l = 0; l < 29; ++l) ASSERT_NEAR(scores[l], expected(l), 1e-5) << "row " << r << " label " << l;
    for (uint32_t l = 0; l < 29; ++l) {
      RankerScores(ranker, d.features, r, &l, 1, scores.data(), &scratch);
      ASSERT_NEAR(scores[0], expected(l), 1e-5) << "row " << r << " label " << l << " alone";
    }
    for (uint32_t l = 0; l < 28; ++l) {
      const uint32_t two[] = {l, 28};
      RankerScores(ranker, d.features, r, two, 2, scores.data(), &scratch);
      ASSERT_NEAR(scores[0], expected(l), 1e-5) << "row " << r << " label " << l << " with 28";
      ASSERT_NEAR(scores[1], expected(28), 1e-5) << "row " << r << " label 28 with " << l;
    }
    for (uint64_t i = d.features.RowBegin(r); i < d.features.RowEnd(r); ++i) {
      const uint64_t f = d.features.col_idx[i];
      searched += ranker.feature_ptr[f + 1] - ranker.feature_ptr[f] > 24;
    }
  }
  EXPECT_GT(searched, 100u);
  // The slots are left clear for the next row.
  EXPECT_EQ(scratch.slot, std::vector<int32_t>(29, -1));
}

}  // namespace
}  // namespace xmlt::kernels
