// The linear ranker's dense lookups (the same matches and scores with or without them) and its
// solver: each label's minimum, by finite differences of its objective and against other weights;
// the same model, bit for bit, on every thread count; its instances and passes.
#include "kernels/ranker/linear_ranker_dual.h"

#include <gtest/gtest.h>
#include <tbb/task_arena.h>

#include <cmath>

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

// The solver's minimum against central differences of each label's primal objective: at the
// minimum, the objective's derivative along every weight and the bias is 0 (the hinge is squared,
// so the objective is differentiable). C = 1 and 4, with and without dense lookups.
TEST(LinearRankerDual, ReachesTheMinimumOfEachLabelsObjective) {
  const data::Dataset d = FrequentFeatureDataset(300, 40, 80, 11);
  const std::vector<uint32_t> shortlists = RandomShortlists(d.num_rows(), 5, 80, 12);
  for (const double c : {1.0, 4.0}) {
    for (const bool dense : {false, true}) {
      LinearRanker ranker = BuildLinearRanker(d, UINT64_MAX);
      if (dense) {
        ASSERT_GT(AddDenseLookups(&ranker, UINT64_MAX / 2), 0u);
      }
      RankerDualOptions options;
      options.c = c;
      options.max_passes = 2000;
      options.tolerance = 1e-6;
      const RankerDualReport report = TrainRankerDual(&ranker, d.features, d.labels, shortlists.data(), 5, options);
      EXPECT_EQ(report.labels_at_limit, 0u) << "C " << c;
      uint64_t checked = 0;
      for (uint32_t label = 0; label < 80; ++label) {
        auto objective = [&] { return RankerLabelObjective(ranker, d.features, d.labels, shortlists.data(), 5, label, c); };
        auto central = [&](float* p) {
          const float saved = *p, step = 1.0f / 1024;  // a power of two: saved +- step is exact
          *p = saved + step;
          const double plus = objective();
          *p = saved - step;
          const double minus = objective();
          *p = saved;
          return (plus - minus) / (2 * double(step));
        };
        // A row at the hinge's kink within a step changes the curvature by up to 2C x^2 there:
        // an error of C step / 2 in the difference. At weights 0 the bias's derivative is of the
        // order of C times its rows.
        const double tolerance = 2e-3 * c;
        EXPECT_NEAR(central(&ranker.bias[label]), 0.0, tolerance) << "C " << c << " label " << label << " bias";
        for (uint64_t f = 0; f < ranker.num_features; ++f) {
          const int64_t pair = ranker.PairOf(f, label);
          if (pair < 0) continue;
          ++checked;
          EXPECT_NEAR(central(&ranker.weight[uint64_t(pair)]), 0.0, tolerance)
              << "C " << c << " label " << label << " feature " << f;
        }
      }
      EXPECT_EQ(checked, ranker.num_pairs());
    }
  }
}

// The minimum is the minimum: moving all of a label's weights at random raises its objective, and
// the objective falls with the passes (each coordinate step lowers the dual's, and the primal
// follows it down).
TEST(LinearRankerDual, NoOtherWeightsDoBetterAndMorePassesDoNoWorse) {
  const data::Dataset d = FrequentFeatureDataset(400, 50, 31, 13);
  const std::vector<uint32_t> shortlists = RandomShortlists(d.num_rows(), 6, 31, 14);
  LinearRanker best = BuildLinearRanker(d, UINT64_MAX);
  RankerDualOptions exact;
  exact.max_passes = 1000;
  exact.tolerance = 1e-7;
  TrainRankerDual(&best, d.features, d.labels, shortlists.data(), 6, exact);
  std::vector<double> minimum(31);
  for (uint32_t l = 0; l < 31; ++l)
    minimum[l] = RankerLabelObjective(best, d.features, d.labels, shortlists.data(), 6, l, 1.0);
  std::mt19937_64 rng(15);
  for (int trial = 0; trial < 5; ++trial) {
    LinearRanker moved = best;
    for (float& w : moved.weight) w += float(int(rng() % 201) - 100) / 2000.0f;
    for (float& b : moved.bias) b += float(int(rng() % 201) - 100) / 2000.0f;
    for (uint32_t l = 0; l < 31; ++l)
      EXPECT_GT(RankerLabelObjective(moved, d.features, d.labels, shortlists.data(), 6, l, 1.0), minimum[l])
          << "trial " << trial << " label " << l;
  }
  double previous = INFINITY;
  for (const uint32_t passes : {1u, 2u, 4u, 16u, 64u}) {
    LinearRanker ranker = BuildLinearRanker(d, UINT64_MAX);
    RankerDualOptions options;
    options.max_passes = passes;
    options.tolerance = 0;
    const RankerDualReport report = TrainRankerDual(&ranker, d.features, d.labels, shortlists.data(), 6, options);
    EXPECT_EQ(report.most_passes, passes);
    double total = 0;
    for (uint32_t l = 0; l < 31; ++l) total += RankerLabelObjective(ranker, d.features, d.labels, shortlists.data(), 6, l, 1.0);
    EXPECT_LE(total, previous * (1 + 1e-9)) << passes << " passes";
    previous = total;
  }
  double least = 0;
  for (const double m : minimum) least += m;
  EXPECT_NEAR(previous, least, 1e-3 * least);
}

// Each label's candidates are its own rows and the rows whose shortlist holds it, counted by hand
// (repeats and labels beyond the ranker skipped), and the tolerance stops a label before the limit.
TEST(LinearRankerDual, ReportsItsInstancesAndPasses) {
  const data::Dataset d = FrequentFeatureDataset(200, 40, 29, 9);
  std::vector<uint32_t> shortlists = RandomShortlists(d.num_rows(), 4, 29, 10);
  shortlists[5] = 29;  // beyond the labels: not counted
  uint64_t expected = 0;
  for (uint64_t r = 0; r < d.num_rows(); ++r)
    expected += CandidatesOf(d.labels, r, shortlists.data() + r * 4, 4, 29).labels.size();
  LinearRanker ranker = BuildLinearRanker(d, UINT64_MAX);
  RankerDualOptions options;
  options.max_passes = 50;
  const RankerDualReport report = TrainRankerDual(&ranker, d.features, d.labels, shortlists.data(), 4, options);
  EXPECT_EQ(report.instances, expected);
  EXPECT_GE(report.mean_passes, 1.0);
  EXPECT_LT(report.mean_passes, 50.0);
  EXPECT_LE(report.most_passes, 50u);
  // No shortlist: a label's own rows alone, all positive: the weights still separate them from 0.
  LinearRanker own = BuildLinearRanker(d, UINT64_MAX);
  const RankerDualReport alone = TrainRankerDual(&own, d.features, d.labels, nullptr, 0, options);
  EXPECT_EQ(alone.instances, d.labels.nnz());
  EXPECT_LT(alone.instances, report.instances);
}

// One thread and every other (97 labels, in chunks that no thread count divides), with and without
// dense lookups: the same model, bit for bit, since each label runs alone, in its own order.
TEST(LinearRankerDual, EveryThreadCountTrainsTheSameModel) {
  const data::Dataset d = FrequentFeatureDataset(500, 70, 97, 5);
  const std::vector<uint32_t> shortlists = RandomShortlists(d.num_rows(), 9, 97, 6);
  const LinearRanker fresh = BuildLinearRanker(d, UINT64_MAX);
  LinearRanker serial = fresh;
  {
    tbb::task_arena one(1);
    one.execute([&] { TrainRankerDual(&serial, d.features, d.labels, shortlists.data(), 9, RankerDualOptions{}); });
  }
  ASSERT_NE(serial.weight, fresh.weight);
  for (const int threads : {2}) {
    for (const bool dense : {false, true}) {
      LinearRanker other = fresh;
      if (dense) {
        ASSERT_GT(AddDenseLookups(&other, UINT64_MAX / 2), 0u);
      }
      tbb::task_arena arena(threads);
      arena.execute([&] { TrainRankerDual(&other, d.features, d.labels, shortlists.data(), 9, RankerDualOptions{}); });
      EXPECT_EQ(other.weight, serial.weight) << threads << " threads, dense " << dense;
      EXPECT_EQ(other.bias, serial.bias) << threads << " threads, dense " << dense;
    }
  }
}

// Issue 61, point 2: the stage solves the labels its held-out rows read first and the rest only
// if the blend it chooses reads the ranker. Two solves of complementary label sets, over weights
// the first leaves alone, give the whole solve's model bit for bit, and their reports combine to
// the whole's.
TEST(LinearRankerDual, TwoSolvesOfComplementaryLabelsTrainTheSameModel) {
  const data::Dataset d = FrequentFeatureDataset(500, 70, 97, 5);
  const std::vector<uint32_t> shortlists = RandomShortlists(d.num_rows(), 9, 97, 6);
  const LinearRanker fresh = BuildLinearRanker(d, UINT64_MAX);
  LinearRanker whole = fresh;
  const RankerDualReport all = TrainRankerDual(&whole, d.features, d.labels, shortlists.data(), 9, RankerDualOptions{});
  std::vector<uint8_t> first(97, 0), rest(97, 0);
  for (uint32_t l = 0; l < 97; ++l) (l % 3 == 1 ? first : rest)[l] = 1;
  LinearRanker parts = fresh;
  std::fill(parts.weight.begin(), parts.weight.end(), 7.0f);  // replaced, label by label
  RankerDualOptions options;
  options.labels = &first;
  const RankerDualReport a = TrainRankerDual(&parts, d.features, d.labels, shortlists.data(), 9, options);
  EXPECT_NE(parts.weight, whole.weight);
  EXPECT_LT(a.labels_solved, all.labels_solved);
  options.labels = &rest;
  const RankerDualReport b = TrainRankerDual(&parts, d.features, d.labels, shortlists.data(), 9, options);
  EXPECT_EQ(parts.weight, whole.weight);
  EXPECT_EQ(parts.bias, whole.bias);
  const RankerDualReport both = CombineRankerDualReports(a, b);
  EXPECT_EQ(both.instances, all.instances);
  EXPECT_EQ(both.labels_solved, all.labels_solved);
  EXPECT_EQ(both.total_passes, all.total_passes);
  EXPECT_EQ(both.mean_passes, all.mean_passes);
  EXPECT_EQ(both.most_passes, all.most_passes);
  EXPECT_EQ(both.labels_at_limit, all.labels_at_limit);
  std::vector<uint8_t> short_mask(96, 1);
  options.labels = &short_mask;
  EXPECT_THROW(TrainRankerDual(&parts, d.features, d.labels, shortlists.data(), 9, options), std::invalid_argument);
}

// Rows whose label is written in their features: the solver ranks each row's own label first
// among all ten.
TEST(LinearRankerDual, RanksEachRowsLabelFirst) {
  std::mt19937_64 rng(7);
  std::vector<DatasetRow> rows(400);
  for (DatasetRow& row : rows) {
    const uint32_t label = uint32_t(rng() % 10);
    row.features = {{label, 0.8f}, {10 + uint32_t(rng() % 5), 0.6f}};
    row.labels = {label};
  }
  const data::Dataset d = MakeDataset(rows, 15, 10);
  LinearRanker ranker = BuildLinearRanker(d, UINT64_MAX);
  std::vector<uint32_t> all(10), shortlists;
  for (uint32_t l = 0; l < 10; ++l) all[l] = l;
  for (uint64_t r = 0; r < d.num_rows(); ++r) shortlists.insert(shortlists.end(), all.begin(), all.end());
  TrainRankerDual(&ranker, d.features, d.labels, shortlists.data(), 10, RankerDualOptions{});
  std::vector<float> scores(10);
  RankerScratch scratch;
  for (uint64_t r = 0; r < d.num_rows(); ++r) {
    RankerScores(ranker, d.features, r, all.data(), 10, scores.data(), &scratch);
    const uint32_t best = uint32_t(std::max_element(scores.begin(), scores.end()) - scores.begin());
    ASSERT_EQ(best, d.labels.col_idx[d.labels.RowBegin(r)]) << "row " << r;
  }
}

TEST(LinearRankerDual, RefusesRowsThatDifferAndBadOptions) {
  const data::Dataset d = FrequentFeatureDataset(20, 10, 8, 7);
  const data::Dataset other = FrequentFeatureDataset(21, 10, 8, 8);
  LinearRanker ranker = BuildLinearRanker(d, UINT64_MAX);
  EXPECT_THROW(TrainRankerDual(&ranker, d.features, other.labels, nullptr, 0, RankerDualOptions{}), std::invalid_argument);
  RankerDualOptions bad;
  bad.c = 0;
  EXPECT_THROW(TrainRankerDual(&ranker, d.features, d.labels, nullptr, 0, bad), std::invalid_argument);
  bad = RankerDualOptions{};
  bad.max_passes = 0;
  EXPECT_THROW(TrainRankerDual(&ranker, d.features, d.labels, nullptr, 0, bad), std::invalid_argument);
  bad = RankerDualOptions{};
  bad.tolerance = -1;
  EXPECT_THROW(TrainRankerDual(&ranker, d.features, d.labels, nullptr, 0, bad), std::invalid_argument);
}

}  // namespace
}  // namespace xmlt::kernels
