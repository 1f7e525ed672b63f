// Tests of the ranker's blend chosen by folds (run/fold_blend_choice.h): when it applies, the folds
// themselves, that every row is scored by models that never saw it, and stops.
#include "run/fold_blend_choice.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <set>
#include <vector>

#include "tests/make_dataset.h"
#include "tests/run/ranker_test_rows.h"

namespace xmlt::run {
namespace {

TEST(FoldBlendChoice, AppliesWhereTooFewRowsCanBeHeldOutAndNotBelowThirty) {
  RankerOptions options;
  EXPECT_EQ(BlendFolds(options, 994), kBlendFolds);  // 99 held out: too few
  EXPECT_EQ(BlendFolds(options, 995), 0u);           // 100 held out
  EXPECT_EQ(BlendFolds(options, 300), kBlendFolds);
  EXPECT_EQ(BlendFolds(options, kMinFoldRows), kBlendFolds);
  EXPECT_EQ(BlendFolds(options, kMinFoldRows - 1), 0u);
  options.blend = 0.5f;  // a fixed blend chooses nothing
  EXPECT_EQ(BlendFolds(options, 300), 0u);
  options.blend = -1;
  options.enabled = false;
  EXPECT_EQ(BlendFolds(options, 300), 0u);
}

TEST(FoldBlendChoice, TheFoldsAreDisjointCompleteEvenAndTheSameForASeed) {
  for (const uint64_t rows : {30u, 31u, 32u, 301u}) {
    const std::vector<std::vector<uint64_t>> folds = SplitFolds(rows, 3, 7);
    ASSERT_EQ(folds.size(), 3u);
    std::set<uint64_t> all;
    size_t smallest = rows, largest = 0;
    for (const std::vector<uint64_t>& fold : folds) {
      EXPECT_TRUE(std::is_sorted(fold.begin(), fold.end()));
      all.insert(fold.begin(), fold.end());
      smallest = std::min(smallest, fold.size());
      largest = std::max(largest, fold.size());
    }
    EXPECT_EQ(all.size(), rows) << "disjoint and complete";
    EXPECT_EQ(*all.rbegin(), rows - 1);
    EXPECT_LE(largest - smallest, 1u) << rows << " rows";
  }
  EXPECT_EQ(SplitFolds(300, 3, 7), SplitFolds(300, 3, 7));
  EXPECT_NE(SplitFolds(300, 3, 7), SplitFolds(300, 3, 8));
  // Drawn, not cut in stripes: the first fold is not every third row.
  const std::vector<uint64_t> first = SplitFolds(300, 3, 7)[0];
  EXPECT_FALSE(std::all_of(first.begin(), first.end(), [&first](uint64_t r) { return r % 3 == first.front() % 3; }));
  EXPECT_THROW(SplitFolds(2, 3, 7), std::invalid_argument);
  EXPECT_THROW(SplitFolds(10, 0, 7), std::invalid_argument);
}

TEST(FoldBlendChoice, EveryRowIsScoredOutOfItsFoldAndTheRankerWins) {
  const data::Dataset train = SeparableRows(300, 20, 1);
  RankerOptions options;
  options.shortlist = 20;  // every label: an untrained MLP's top list is arbitrary
  std::vector<uint64_t> trained_on;
  const FoldMlpTrainer trainer = [&](const data::Dataset& rows) -> std::optional<kernels::Model<float>> {
    trained_on.push_back(rows.num_rows());
    return UntrainedMlp(40, 20);
  };
  const FoldBlendChoice result = ChooseBlendByFolds(train, options, 5, trainer, /*scoring=*/true);
  EXPECT_FALSE(result.stopped);
  EXPECT_EQ(result.folds, kBlendFolds);
  EXPECT_EQ(result.rows, 300u);
  EXPECT_EQ(trained_on, (std::vector<uint64_t>{200, 200, 200})) << "each fold's MLP on the other two folds";
  const BlendChoice& c = result.choice;
  ASSERT_EQ(c.trials.size(), 2 * BlendGrid().size() - 1);
  // Every row scored once: P@1 over 300 rows is a multiple of 1/300.
  const double alone = c.trials.front().metrics.p1;
  EXPECT_NEAR(alone * 300, std::round(alone * 300), 1e-6);
  EXPECT_LT(alone, 0.3);
  EXPECT_GT(c.blend, 0.0f);
  EXPECT_GT(c.trials[c.chosen].metrics.p1, 0.9) << "the out-of-fold linear model separates the rows";
}

TEST(FoldBlendChoice, AnMlpThatSeparatesTheRowsKeepsItselfAlone) {
  // Labels the linear model cannot read (every row's features alike), and an MLP whose scores are
  // the truth: the MLP alone wins out of fold.
  std::vector<testing::DatasetRow> rows(60);
  for (size_t i = 0; i < rows.size(); ++i) rows[i] = {{{0, 1.0f}}, {uint32_t(i % 2)}};
  const data::Dataset train = testing::MakeDataset(rows, 1, 2);
  RankerOptions options;
  options.shortlist = 5;
  const FoldMlpTrainer constant = [](const data::Dataset&) -> std::optional<kernels::Model<float>> {
    return UntrainedMlp(1, 2);
  };
  const FoldBlendChoice result = ChooseBlendByFolds(train, options, 5, constant, true);
  ASSERT_FALSE(result.stopped);
  // Neither model can tell the rows apart: a tie, which goes to the MLP alone.
  EXPECT_EQ(result.choice.blend, 0.0f);
  EXPECT_EQ(result.choice.chosen, 0u);
}

TEST(FoldBlendChoice, OtherRanksTrainEveryFoldAndScoreNothing) {
  const data::Dataset train = SeparableRows(90, 10, 1);
  int calls = 0;
  const FoldMlpTrainer trainer = [&](const data::Dataset&) -> std::optional<kernels::Model<float>> {
    ++calls;
    return UntrainedMlp(20, 10);
  };
  const FoldBlendChoice result = ChooseBlendByFolds(train, RankerOptions{}, 5, trainer, /*scoring=*/false);
  EXPECT_FALSE(result.stopped);
  EXPECT_EQ(calls, 3) << "the MLPs train across the ranks: every rank trains every fold";
  EXPECT_TRUE(result.choice.trials.empty());
}

TEST(FoldBlendChoice, AStopInAFoldsTrainingOrBetweenFoldsEndsIt) {
  const data::Dataset train = SeparableRows(90, 10, 1);
  int calls = 0;
  const FoldMlpTrainer stopped_in_second = [&](const data::Dataset&) -> std::optional<kernels::Model<float>> {
    if (++calls == 2) return std::nullopt;
    return UntrainedMlp(20, 10);
  };
  EXPECT_TRUE(ChooseBlendByFolds(train, RankerOptions{}, 5, stopped_in_second, true).stopped);
  EXPECT_EQ(calls, 2);
  calls = 0;
  const FoldMlpTrainer counting = [&](const data::Dataset&) -> std::optional<kernels::Model<float>> {
    ++calls;
    return UntrainedMlp(20, 10);
  };
  const FoldBlendChoice stopped = ChooseBlendByFolds(train, RankerOptions{}, 5, counting, true, [] { return true; });
  EXPECT_TRUE(stopped.stopped);
  EXPECT_EQ(calls, 0) << "a stop already asked ends it before the first fold trains";
  EXPECT_THROW(ChooseBlendByFolds(SeparableRows(20, 10, 1), RankerOptions{}, 5, counting, true),
               std::invalid_argument)
      << "20 rows choose no blend";
}

}  // namespace
}  // namespace xmlt::run
