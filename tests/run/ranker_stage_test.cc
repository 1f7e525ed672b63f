// Tests of the ranker's stage after training (run/ranker_stage.h): the held-out rows, the pair
// count checked before training, and the stage itself on rows a linear model separates and an
// untrained MLP does not.
#include "run/ranker_stage.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <random>
#include <set>
#include <vector>

#include "kernels/linear_ranker.h"
#include "tests/make_dataset.h"

namespace xmlt::run {
namespace {

TEST(RankerStage, HoldsOutATenthOfTheRowsUpToFiveThousand) {
  RankerOptions options;
  EXPECT_EQ(HoldoutRows(options, 45000), 4500u);
  EXPECT_EQ(HoldoutRows(options, 4880), 488u);
  EXPECT_EQ(HoldoutRows(options, 1000000), kMaxHoldoutRows);
  EXPECT_EQ(HoldoutRows(options, 999), 100u);
  EXPECT_EQ(HoldoutRows(options, 990), 0u) << "99 rows cannot choose a blend";
  options.holdout = 0.5;
  EXPECT_EQ(HoldoutRows(options, 2000), 1000u);
  options.blend = 0.6f;  // a fixed blend chooses nothing
  EXPECT_EQ(HoldoutRows(options, 45000), 0u);
  options.blend = -1;
  options.enabled = false;
  EXPECT_EQ(HoldoutRows(options, 45000), 0u);
}

TEST(RankerStage, TheSplitIsDisjointCompleteAndTheSameForASeed) {
  const HoldoutSplit split = SplitHoldout(1000, 100, 7);
  ASSERT_EQ(split.held_out.size(), 100u);
  ASSERT_EQ(split.kept.size(), 900u);
  EXPECT_TRUE(std::is_sorted(split.held_out.begin(), split.held_out.end()));
  EXPECT_TRUE(std::is_sorted(split.kept.begin(), split.kept.end()));
  std::set<uint64_t> all(split.held_out.begin(), split.held_out.end());
  all.insert(split.kept.begin(), split.kept.end());
  EXPECT_EQ(all.size(), 1000u);
  EXPECT_EQ(*all.rbegin(), 999u);
  EXPECT_EQ(SplitHoldout(1000, 100, 7).held_out, split.held_out);
  EXPECT_NE(SplitHoldout(1000, 100, 8).held_out, split.held_out);
  const HoldoutSplit none = SplitHoldout(5, 0, 7);
  EXPECT_TRUE(none.held_out.empty());
  EXPECT_EQ(none.kept, (std::vector<uint64_t>{0, 1, 2, 3, 4}));
}

TEST(RankerStage, ThePairCountIsExactWhereTheBoundWouldPassTheLimit) {
  // Two rows that share feature 0 and label 1: 2 x 2 + 2 x 1 = 6 by the bound, 5 distinct pairs.
  const data::Dataset rows =
      testing::MakeDataset({{{{0, 1.0f}, {1, 1.0f}}, {1, 2}}, {{{0, 1.0f}, {2, 1.0f}}, {1}}}, 3, 3);
  EXPECT_EQ(kernels::CountLinearRankerPairs(rows), 5u);
  EXPECT_EQ(CountRankerPairs(rows, 100), 6u);  // within the limit, the bound is enough
  EXPECT_EQ(CountRankerPairs(rows, 5), 5u);    // past it, the exact count decides
  EXPECT_EQ(CountRankerPairs(rows, 4), 5u);
}

// Rows whose one label is their first feature's id (mod `labels`), among noise features: a linear
// model separates them, an untrained MLP does not.
data::Dataset SeparableRows(uint32_t rows, uint32_t labels, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<testing::DatasetRow> out(rows);
  for (testing::DatasetRow& row : out) {
    const uint32_t label = uint32_t(rng() % labels);
    const uint32_t noise = labels + uint32_t(rng() % labels);
    row.features = {{label, 0.8f}, {noise, 0.6f}};
    row.labels = {label};
  }
  return testing::MakeDataset(out, 2 * labels, labels);
}

kernels::Model<float> UntrainedMlp(uint64_t features, uint64_t labels) {
  kernels::ModelShape shape;
  shape.num_features = features;
  shape.num_labels = labels;
  shape.hidden = {8};
  return kernels::InitModel<float>(shape, 3);
}

TEST(RankerStage, TheChosenBlendLiftsTheHeldOutRowsOverTheMlpAlone) {
  const data::Dataset train = SeparableRows(800, 20, 1), holdout = SeparableRows(200, 20, 2);
  const kernels::Model<float> mlp = UntrainedMlp(40, 20);
  RankerOptions options;
  options.shortlist = 20;  // every label: an untrained MLP's top list is arbitrary
  const RankerStageResult result = TrainShortlistRanker(mlp, train, &holdout, options);
  ASSERT_NE(result.ranker, nullptr);
  const RankerStageReport& r = result.report;
  EXPECT_EQ(r.holdout_rows, 200u);
  EXPECT_EQ(r.pairs, kernels::CountLinearRankerPairs(train));
  EXPECT_GE(r.solver.mean_passes, 1.0);
  EXPECT_LE(r.solver.most_passes, options.passes);
  EXPECT_GE(r.solver.instances, train.labels.nnz());
  ASSERT_EQ(r.choice.trials.size(), 2 * kernels::BlendGrid().size() - 1);
  EXPECT_GT(result.ranker->blend, 0.0f);
  EXPECT_EQ(result.ranker->blend, r.choice.blend);
  EXPECT_EQ(result.ranker->form, r.choice.form);
  const double alone = r.choice.trials.front().metrics.p1;
  double chosen = 0;
  for (const kernels::BlendTrial& t : r.choice.trials)
    if (t.blend == r.choice.blend && t.form == r.choice.form) chosen = t.metrics.p1;
  EXPECT_LT(alone, 0.3);
  EXPECT_GT(chosen, 0.9);
  EXPECT_EQ(result.ranker->shortlist, 20u);
}

TEST(RankerStage, AFixedBlendNeedsNoHeldOutRowsAndZeroKeepsTheMlpAlone) {
  const data::Dataset train = SeparableRows(300, 10, 1);
  const kernels::Model<float> mlp = UntrainedMlp(20, 10);
  RankerOptions options;
  options.blend = 0.7f;
  const RankerStageResult fixed = TrainShortlistRanker(mlp, train, nullptr, options);
  ASSERT_NE(fixed.ranker, nullptr);
  EXPECT_EQ(fixed.ranker->blend, 0.7f);
  EXPECT_EQ(fixed.ranker->form, kernels::BlendForm::kGeometric);
  EXPECT_TRUE(fixed.report.choice.trials.empty());
  // A shortlist longer than the labels is cut to them.
  EXPECT_EQ(fixed.ranker->shortlist, 10u);
  options.blend = 0.0f;
  EXPECT_EQ(TrainShortlistRanker(mlp, train, nullptr, options).ranker, nullptr);
  options.blend = -1;  // auto, without rows to choose on
  EXPECT_THROW(TrainShortlistRanker(mlp, train, nullptr, options), std::invalid_argument);
  // Rows of other shapes than the model's are refused before anything is built.
  options.blend = 0.5f;
  EXPECT_THROW(TrainShortlistRanker(UntrainedMlp(20, 11), train, nullptr, options), std::invalid_argument);
}

}  // namespace
}  // namespace xmlt::run

namespace xmlt::run {
namespace {

// Issue 61, point 3: a stop during the stage was not seen. The stage asks its `stopped` between
// the shortlists' chunks, the solver's labels and passes, and its steps, and ends at the first
// true with no ranker; a stop asked at any of those points ends it there.
TEST(RankerStage, AStopEndsTheStageAtItsNextCheckWithNoRanker) {
  const data::Dataset train = SeparableRows(3000, 20, 1), holdout = SeparableRows(200, 20, 2);
  const kernels::Model<float> mlp = UntrainedMlp(40, 20);
  RankerOptions options;
  options.shortlist = 20;
  std::atomic<int> counted{0};  // asked from the solver's threads too
  const RankerStageResult whole = TrainShortlistRanker(mlp, train, &holdout, options, [&] {
    ++counted;
    return false;
  });
  const int checks = counted.load();
  ASSERT_NE(whole.ranker, nullptr);
  EXPECT_FALSE(whole.stopped);
  ASSERT_GT(checks, 20) << "a check per chunk of rows, per label and per pass at least";
  for (const int at : {1, 2, checks / 2, checks - 1}) {
    std::atomic<int> asked{0};
    const RankerStageResult stopped = TrainShortlistRanker(mlp, train, &holdout, options, [&] { return ++asked >= at; });
    EXPECT_TRUE(stopped.stopped) << "stopped at check " << at << " of " << checks;
    EXPECT_EQ(stopped.ranker, nullptr) << at;
    if (at <= checks / 2) EXPECT_LT(asked.load(), checks) << "went on past the stop at check " << at;
  }
}

}  // namespace
}  // namespace xmlt::run
