// The linear ranker's dense lookups and its label-sharded epochs: the same matches and scores with
// or without the lookups, shards that cover the labels, and the same model, bit for bit, from
// every shard count as from one row at a time.
#include "kernels/linear_ranker_epoch.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <set>
#include <stdexcept>
#include <vector>

#include "tests/make_dataset.h"

namespace xmlt::kernels {
namespace {

using testing::DatasetRow;
using testing::MakeDataset;

// Rows of a few rare features and, half the time each, some of the first four features, which so
// meet most of the labels (long lists, worth a dense row); 0..5 labels a row.
data::Dataset FrequentFeatureDataset(uint32_t rows, uint32_t features, uint32_t labels, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<DatasetRow> out(rows);
  for (DatasetRow& row : out) {
    std::set<uint32_t> f, l;
    for (uint32_t common = 0; common < 4; ++common)
      if (rng() % 2) f.insert(common);
    const uint32_t rare = 1 + uint32_t(rng() % 4), nl = uint32_t(rng() % 6);
    const size_t with_rare = f.size() + rare;
    while (f.size() < with_rare) f.insert(4 + uint32_t(rng() % (features - 4)));
    while (l.size() < nl) l.insert(uint32_t(rng() % labels));
    for (uint32_t id : f) row.features.push_back({id, 0.1f + float(rng() % 90) / 100.0f});
    row.labels.assign(l.begin(), l.end());
  }
  return MakeDataset(out, features, labels);
}

// Each row's shortlist: `size` labels drawn at random (repeats and labels the row has included,
// as a model's top k may hold them).
std::vector<uint32_t> RandomShortlists(uint64_t rows, uint32_t size, uint32_t labels, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<uint32_t> out(rows * size);
  for (uint32_t& label : out) label = uint32_t(rng() % labels);
  return out;
}

TEST(LinearRankerDense, LookupsGoToTheLongestListsWithinTheBudget) {
  const data::Dataset d = FrequentFeatureDataset(400, 60, 150, 1);
  LinearRanker ranker = BuildLinearRanker(d, UINT64_MAX);
  const uint64_t row_bytes = 150 * sizeof(uint32_t);
  EXPECT_EQ(AddDenseLookups(&ranker, 3 * row_bytes + row_bytes / 2), 3u);
  uint64_t shortest_dense = UINT64_MAX, longest_other = 0;
  for (uint64_t f = 0; f < ranker.num_features; ++f) {
    const uint64_t length = ranker.feature_ptr[f + 1] - ranker.feature_ptr[f];
    if (ranker.dense_row[f] >= 0) {
      shortest_dense = std::min(shortest_dense, length);
      // The row holds exactly the feature's pairs.
      const uint32_t* offsets = ranker.dense_offset.data() + uint64_t(ranker.dense_row[f]) * 150;
      for (uint32_t label = 0; label < 150; ++label) {
        const int64_t pair = ranker.PairOf(f, label);
        ASSERT_EQ(offsets[label], pair < 0 ? 0u : uint32_t(uint64_t(pair) - ranker.feature_ptr[f] + 1));
      }
    } else {
      longest_other = std::max(longest_other, length);
    }
  }
  EXPECT_GE(shortest_dense, kMinDenseLookupLabels);
  EXPECT_GE(shortest_dense, longest_other);
  // However large the budget, short lists keep their scan; no budget, no lookups.
  const uint64_t all = AddDenseLookups(&ranker, UINT64_MAX / 2);
  EXPECT_GE(all, 4u);
  EXPECT_LT(all, 60u);
  EXPECT_EQ(AddDenseLookups(&ranker, row_bytes - 1), 0u);
  EXPECT_TRUE(ranker.dense_row.empty());
}

// The same matches, in the same order per candidate, so the same scores to the bit, whether a
// feature's pairs are found in a dense row, a scan or a binary search; for all the labels at
// once, one label, a label range (a shard's) and labels beyond the ranker.
TEST(LinearRankerDense, ScoresAreTheSameWithAndWithoutLookups) {
  const data::Dataset d = FrequentFeatureDataset(300, 50, 120, 2);
  LinearRanker plain = BuildLinearRanker(d, UINT64_MAX);
  std::mt19937_64 rng(3);
  for (float& w : plain.weight) w = float(int(rng() % 200) - 100) / 50.0f;
  for (float& b : plain.bias) b = float(int(rng() % 200) - 100) / 100.0f;
  LinearRanker dense = plain;
  ASSERT_GT(AddDenseLookups(&dense, UINT64_MAX / 2), 0u);
  std::vector<std::vector<uint32_t>> asks(4);
  for (uint32_t l = 0; l < 120; ++l) asks[0].push_back(l);
  asks[1] = {77};
  for (uint32_t l = 40; l < 61; ++l) asks[2].push_back(l);
  asks[3] = {119, 3, 500, 64, 0};
  RankerScratch a, b;
  std::vector<float> with(120), without(120);
  uint64_t matched = 0;
  for (uint64_t r = 0; r < d.num_rows(); ++r)
    for (const std::vector<uint32_t>& ask : asks) {
      RankerScores(plain, d.features, r, ask.data(), ask.size(), without.data(), &a);
      RankerScores(dense, d.features, r, ask.data(), ask.size(), with.data(), &b);
      ASSERT_EQ(a.matches.size(), b.matches.size()) << "row " << r;
      matched += a.matches.size();
      for (size_t i = 0; i < ask.size(); ++i) ASSERT_EQ(with[i], without[i]) << "row " << r << " label " << ask[i];
    }
  EXPECT_GT(matched, 1000u);
}

// A label's work is the features of the rows that have it among their candidates, counted by hand.
TEST(LinearRankerEpoch, LabelWorkCountsTheFeaturesOfEveryRowThatAsksTheLabel) {
  const data::Dataset d = FrequentFeatureDataset(200, 40, 31, 9);
  std::vector<uint32_t> shortlists = RandomShortlists(d.num_rows(), 4, 31, 10);
  shortlists[5] = 31;  // beyond the labels: not counted
  std::vector<uint64_t> expected(31, 1);
  for (uint64_t r = 0; r < d.num_rows(); ++r) {
    const uint64_t nnz = d.features.RowEnd(r) - d.features.RowBegin(r);
    for (uint64_t j = d.labels.RowBegin(r); j < d.labels.RowEnd(r); ++j) expected[d.labels.col_idx[j]] += nnz;
    for (uint32_t i = 0; i < 4; ++i)
      if (shortlists[r * 4 + i] < 31) expected[shortlists[r * 4 + i]] += nnz;
  }
  EXPECT_EQ(RankerLabelWork(31, d.features, d.labels, shortlists.data(), 4), expected);
  // No shortlist: the rows' own labels alone.
  const std::vector<uint64_t> own = RankerLabelWork(31, d.features, d.labels, nullptr, 0);
  EXPECT_LT(own[0], expected[0]);
}

TEST(LinearRankerEpoch, ShardsCoverTheLabelsOnceWithBalancedWork) {
  std::mt19937_64 rng(4);
  std::vector<uint64_t> work(97);
  for (size_t l = 0; l < work.size(); ++l) work[l] = 1 + (l < 5 ? 500 : rng() % 40);  // a few heavy labels first
  const uint64_t heaviest = *std::max_element(work.begin(), work.end());
  uint64_t total = 0;
  for (const uint64_t w : work) total += w;
  for (uint32_t shards : {1u, 2u, 3u, 7u, 96u, 97u, 200u}) {
    const std::vector<uint32_t> borders = RankerShardBorders(work, shards);
    ASSERT_EQ(borders.size(), shards + 1);
    EXPECT_EQ(borders.front(), 0u);
    EXPECT_EQ(borders.back(), 97u);
    EXPECT_TRUE(std::is_sorted(borders.begin(), borders.end())) << shards << " shards";
    // A shard's work is within one label's of its share.
    for (uint32_t s = 0; s < shards; ++s) {
      uint64_t mine = 0;
      for (uint32_t l = borders[s]; l < borders[s + 1]; ++l) mine += work[l];
      EXPECT_LE(mine, total / shards + heaviest) << shards << " shards, shard " << s;
    }
  }
  EXPECT_THROW(RankerShardBorders(work, 0), std::invalid_argument);
}

// Two epochs from 1, 2, 3 and 7 shards (97 labels: none divides them) and with dense lookups give
// the model that RankerTrainRow gives row by row on one thread.
TEST(LinearRankerEpoch, EveryShardCountTrainsTheModelOfOneThread) {
  const data::Dataset d = FrequentFeatureDataset(500, 70, 97, 5);
  const std::vector<uint32_t> shortlists = RandomShortlists(d.num_rows(), 9, 97, 6);
  LinearRanker serial = BuildLinearRanker(d, UINT64_MAX);
  const LinearRanker fresh = serial;
  std::vector<double> serial_loss;
  RankerRowGradient gradient;
  for (int epoch = 0; epoch < 2; ++epoch) {
    double loss = 0;
    for (uint64_t r = 0; r < d.num_rows(); ++r)
      loss += RankerTrainRow(&serial, d.features, r, CandidatesOf(d.labels, r, shortlists.data() + r * 9, 9, 97),
                             0.1f, &gradient);
    serial_loss.push_back(loss);
  }
  ASSERT_LT(serial_loss[1], serial_loss[0]);
  for (uint32_t shards : {1u, 2u, 3u, 7u}) {
    for (bool dense : {false, true}) {
      LinearRanker sharded = fresh;
      if (dense) {
        ASSERT_GT(AddDenseLookups(&sharded, UINT64_MAX / 2), 0u);
      }
      for (int epoch = 0; epoch < 2; ++epoch) {
        const double loss = RankerTrainEpoch(&sharded, d.features, d.labels, shortlists.data(), 9, 0.1f, shards);
        EXPECT_NEAR(loss, serial_loss[epoch], 1e-9 * serial_loss[epoch]) << shards << " shards, epoch " << epoch;
      }
      EXPECT_EQ(sharded.weight, serial.weight) << shards << " shards, dense " << dense;
      EXPECT_EQ(sharded.square, serial.square) << shards << " shards, dense " << dense;
      EXPECT_EQ(sharded.bias, serial.bias) << shards << " shards, dense " << dense;
      EXPECT_EQ(sharded.bias_square, serial.bias_square) << shards << " shards, dense " << dense;
    }
  }
}

TEST(LinearRankerEpoch, RefusesFeaturesAndLabelsOfDifferentRows) {
  const data::Dataset d = FrequentFeatureDataset(20, 10, 8, 7);
  const data::Dataset other = FrequentFeatureDataset(21, 10, 8, 8);
  LinearRanker ranker = BuildLinearRanker(d, UINT64_MAX);
  EXPECT_THROW(RankerTrainEpoch(&ranker, d.features, other.labels, nullptr, 0, 0.1f, 2), std::invalid_argument);
}

}  // namespace
}  // namespace xmlt::kernels
