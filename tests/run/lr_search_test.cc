// --lr auto's search: its grid, its held-out slice and budget, the pick one step below the short
// runs' winner, and a result that depends only on the data and the seed.
#include "run/lr_search.h"

#include <gtest/gtest.h>
#include <tbb/global_control.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <sstream>
#include <stdexcept>

#include "data/row_normalization.h"
#include "data/text_reader.h"
#include "data/row_subset.h"
#include "data/synthetic_generator.h"
#include "engine/sampled_output.h"

namespace xmlt::run {
namespace {

data::Dataset SmallSet(uint64_t rows) {
  data::GeneratorConfig config;
  config.train_rows = rows;
  config.test_rows = 1;
  config.features = 300;
  config.labels = 40;
  config.nnz_per_row = 12;
  config.labels_per_row = 2;
  return data::NormalizeRowsL2(data::Generate(config).train);
}

LrSearchResult Search(const data::Dataset& train, uint32_t hidden, uint32_t batch) {
  scheduler::TrainOptions options;
  options.batch = batch;
  return SearchLearningRate(train, {train.num_features(), {hidden}, train.num_labels()}, options);
}

TEST(LrSearch, GridIsPowersOfTenAndTheirHalves) {
  EXPECT_EQ(LrSearchGrid(), (std::vector<double>{0.005, 0.01, 0.05, 0.1, 0.5, 1, 5}));
}

TEST(LrSearch, PicksTheGridStepBelowTheShortRunsWinnerOnAHeldOutSlice) {
  const data::Dataset train = SmallSet(1500);
  const LrSearchResult result = Search(train, 16, 64);
  EXPECT_EQ(result.heldout_rows, 150u);
  EXPECT_EQ(result.search_rows, 1350u);
  EXPECT_EQ(result.batches_per_candidate, 44u);  // two passes of ceil(1350 / 64) = 22 batches
  ASSERT_EQ(result.candidates.size(), LrSearchGrid().size());
  size_t winner = 0;
  for (size_t i = 0; i < result.candidates.size(); ++i) {
    EXPECT_EQ(result.candidates[i].lr, LrSearchGrid()[i]);
    EXPECT_GE(result.candidates[i].heldout_p1, 0.0);
    EXPECT_LE(result.candidates[i].heldout_p1, 1.0);
    if (result.candidates[i].heldout_p1 > result.candidates[winner].heldout_p1) winner = i;
  }
  EXPECT_EQ(result.winner, result.candidates[winner].lr);
  EXPECT_EQ(result.picked, result.candidates[winner == 0 ? 0 : winner - 1].lr);
  // The tiny rates barely move the model in 44 batches: the winner is not the smallest.
  EXPECT_GT(winner, 0u);
  // Seeded: the same search again gives the same numbers.
  const LrSearchResult again = Search(train, 16, 64);
  for (size_t i = 0; i < result.candidates.size(); ++i)
    EXPECT_EQ(again.candidates[i].heldout_p1, result.candidates[i].heldout_p1);
}

TEST(LrSearch, TheSplitIsSeededAndHoldsOutATenthOfTheRowsOnce) {
  const LrSearchSplit split = SplitForLrSearch(1234, 7);
  EXPECT_EQ(split.heldout.size(), 123u);
  std::vector<uint64_t> all = split.heldout;
  all.insert(all.end(), split.search.begin(), split.search.end());
  std::sort(all.begin(), all.end());
  for (uint64_t r = 0; r < all.size(); ++r) ASSERT_EQ(all[r], r);
  EXPECT_EQ(SplitForLrSearch(1234, 7).heldout, split.heldout);
  EXPECT_NE(SplitForLrSearch(1234, 8).heldout, split.heldout);
}

// The candidates are scored on the held-out rows, never on the rows they trained on: here every
// training row has label 0 and every held-out row another label, on features of the same kind, so
// a candidate that learnt its rows ranks label 0 first on every held-out row and scores nothing.
// Scored on its own rows it would score about 1.
TEST(LrSearch, CandidatesAreScoredOnTheHeldOutRowsOnly) {
  const uint64_t rows = 1500;
  const LrSearchSplit split = SplitForLrSearch(rows, scheduler::TrainOptions{}.seed);
  std::vector<bool> heldout(rows, false);
  for (const uint64_t r : split.heldout) heldout[r] = true;
  std::mt19937_64 rng(3);
  std::ostringstream text;
  for (uint64_t r = 0; r < rows; ++r) {
    text << (heldout[r] ? 1 + r % 39 : 0);
    for (uint32_t f = 0; f < 5; ++f) text << ' ' << 3 * f + rng() % 3 << ":0.4";
    text << '\n';
  }
  const data::Dataset train = data::ParseLabeledText(text.str(), "split.txt", {});
  ASSERT_EQ(train.num_labels(), 40u);
  const LrSearchResult result = Search(train, 16, 64);
  EXPECT_EQ(result.heldout_rows, split.heldout.size());
  for (const LrCandidate& c : result.candidates) {
    EXPECT_FALSE(c.diverged) << "lr " << c.lr;
    EXPECT_LT(c.heldout_p1, 0.1) << "lr " << c.lr << " was scored on the rows it trained on";
  }
  // Not vacuous: the rates that learn give a held-out loss far above the untrained model's
  // log(40) = 3.7, as label 0 takes the probability from every held-out label.
  EXPECT_GT(result.candidates.back().heldout_loss, 6.0);
}

// Labels on one side of the split only: a message that says so, not "no training row has a label"
// or a pick among candidates that all scored zero.
TEST(LrSearch, LabelsOnOneSideOfTheSplitOnlyAreRefusedSayingWhich) {
  const uint64_t rows = 200;
  const LrSearchSplit split = SplitForLrSearch(rows, scheduler::TrainOptions{}.seed);
  std::vector<bool> heldout(rows, false);
  for (const uint64_t r : split.heldout) heldout[r] = true;
  for (const bool label_heldout : {true, false}) {
    std::ostringstream text;
    for (uint64_t r = 0; r < rows; ++r) text << (heldout[r] == label_heldout ? "1" : "") << " " << r % 7 << ":1\n";
    const data::Dataset train = data::ParseLabeledText(text.str(), "side.txt", {});
    try {
      Search(train, 4, 16);
      ADD_FAILURE() << "no error with labels on the " << (label_heldout ? "held-out" : "search") << " side only";
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find(label_heldout ? "rows it trains on has a label" : "held-out rows has a label"),
                std::string::npos)
          << e.what();
    }
  }
}

TEST(LrSearch, BudgetIsCappedAtOneHundredBatchesAndTheSliceAtFiveThousandRows) {
  const LrSearchResult result = Search(SmallSet(60000), 8, 256);
  EXPECT_EQ(result.heldout_rows, 5000u);
  EXPECT_EQ(result.batches_per_candidate, 100u);
}

TEST(LrSearch, RefusesFewerThanTwoRows) {
  const data::Dataset one = data::SelectRows(SmallSet(10), {0});
  EXPECT_THROW(SearchLearningRate(one, {one.num_features(), {4}, one.num_labels()}, scheduler::TrainOptions{}),
               std::invalid_argument);
}

// --algo slide searches with its own step: each candidate trains on a CPU device with the sampled
// output layer (here 8 active labels of 40 a row), not the dense step; on one thread that search is
// as repeatable as the dense one.
TEST(LrSearch, WithTheSampledOutputLayerTheCandidatesTrainWithTheSampledStep) {
  tbb::global_control one_thread(tbb::global_control::max_allowed_parallelism, 1);
  const data::Dataset train = SmallSet(800);
  const kernels::ModelShape shape{train.num_features(), {16}, train.num_labels()};
  scheduler::TrainOptions options;
  options.batch = 64;
  options.local_momentum = 0;  // as --algo slide: plain SGD either way, so only the step differs
  engine::SampledOutputOptions sampled = engine::SampledOutputOptions::PresetFor(shape.num_labels);
  sampled.k = 6, sampled.l = 4, sampled.min_active = 8;
  const LrSearchResult dense = SearchLearningRate(train, shape, options);
  const LrSearchResult slide = SearchLearningRate(train, shape, options, engine::DeviceSpec{}, sampled);
  const LrSearchResult again = SearchLearningRate(train, shape, options, engine::DeviceSpec{}, sampled);
  EXPECT_FALSE(dense.sampled);
  EXPECT_TRUE(slide.sampled);
  ASSERT_EQ(slide.candidates.size(), dense.candidates.size());
  int differ = 0;
  for (size_t i = 0; i < slide.candidates.size(); ++i) {
    EXPECT_EQ(slide.candidates[i].heldout_loss, again.candidates[i].heldout_loss) << slide.candidates[i].lr;
    differ += !slide.candidates[i].diverged &&
              std::abs(slide.candidates[i].heldout_loss - dense.candidates[i].heldout_loss) > 1e-4;
  }
  EXPECT_GE(differ, 5) << "the sampled search scored as the dense one";
  EXPECT_EQ(slide.picked, again.picked);
}

}  // namespace
}  // namespace xmlt::run
