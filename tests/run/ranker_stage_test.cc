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

#include "kernels/ranker/linear_ranker.h"
#include "kernels/ranker/linear_ranker_dual.h"
#include "scheduler/memory_plan.h"
#include "engine/evaluator.h"
#include "tests/make_dataset.h"
#include "tests/run/ranker_test_rows.h"

namespace xmlt::run {
namespace {

TEST(RankerStage, HoldsOutATenthOfTheRowsUpToFiveThousand) {
  RankerOptions options;
  EXPECT_EQ(HoldoutRows(options, 45000), 4500u);
  EXPECT_EQ(HoldoutRows(options, 4880), 488u);
  EXPECT_EQ(HoldoutRows(options, 1000000), kMaxHoldoutRows);
  EXPECT_EQ(HoldoutRows(options, 999), 100u);
  EXPECT_EQ(HoldoutRows(options, 990), 0u) << "99 rows cannot choose a blend";
  // As docs/cli.md says: a tenth of 995 rows rounds to 100, the fewest that choose; 994 fit none.
  EXPECT_EQ(HoldoutRows(options, 995), 100u);
  EXPECT_EQ(HoldoutRows(options, 994), 0u);
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
  // Two rows of features 0 and 1 and label 1, of 3 features and 2 labels: 2 pairs. By label, 2 + 2
  // features capped at the 3 there are: 3; by feature, 1 + 1 labels each: 4; the bound is 3 (the
  // rows' features x labels summed, the bound before, was 4).
  const data::Dataset rows = testing::MakeDataset({{{{0, 1.0f}, {1, 1.0f}}, {1}}, {{{0, 1.0f}, {1, 1.0f}}, {1}}}, 3, 2);
  EXPECT_EQ(kernels::CountLinearRankerPairs(rows), 2u);
  EXPECT_EQ(RankerPairBound(rows), 3u);
  EXPECT_EQ(CountRankerPairs(rows, 100), 3u);  // within the limit, the bound is enough
  EXPECT_EQ(CountRankerPairs(rows, 2), 2u);    // past it, the exact count decides
  EXPECT_EQ(CountRankerPairs(rows, 1), 2u);
  // The other side caps too: feature 0 with labels 0 and 1 in two rows, of 3 labels: by feature
  // 2 + 2 capped at 3; by label 2 + 2 (each label's one feature, twice, capped at 2 features).
  const data::Dataset wide = testing::MakeDataset({{{{0, 1.0f}}, {0, 1}}, {{{0, 1.0f}}, {0, 1}}}, 2, 3);
  EXPECT_EQ(kernels::CountLinearRankerPairs(wide), 2u);
  EXPECT_EQ(RankerPairBound(wide), 3u);
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
  ASSERT_EQ(r.choice.trials.size(), 2 * BlendGrid().size() - 1);
  EXPECT_GT(result.ranker->blend, 0.0f);
  EXPECT_EQ(result.ranker->blend, r.choice.blend);
  EXPECT_EQ(result.ranker->form, r.choice.form);
  const double alone = r.choice.trials.front().metrics.p1;
  double chosen = 0;
  for (const BlendTrial& t : r.choice.trials)
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

// Issue 61, point 2: the memory plan left the ranker out (planned 189 MiB, peak 2,413 MiB). It
// counts the ranker's stage now: its pairs bounded before training, at 8 bytes each, as the
// ranker holds them, and the rest of the stage next to what it allocates here.
TEST(RankerStage, TheMemoryPlanCountsTheRankersPairsShortlistsAndSolver) {
  std::mt19937_64 rng(4);
  std::vector<testing::DatasetRow> rows(600);
  for (testing::DatasetRow& row : rows) {
    std::set<uint32_t> f, l;
    while (f.size() < 30) f.insert(uint32_t(rng() % 300));
    while (l.size() < 8) l.insert(uint32_t(rng() % 200));
    for (const uint32_t id : f) row.features.push_back({id, 0.5f});
    row.labels.assign(l.begin(), l.end());
  }
  const data::Dataset train = testing::MakeDataset(rows, 300, 200);
  const uint64_t pairs = kernels::CountLinearRankerPairs(train), bound = RankerPairBound(train);
  EXPECT_GE(bound, pairs);
  EXPECT_LT(bound, 600u * 30 * 8) << "tighter than the rows' features x labels";
  const kernels::Model<float> mlp = UntrainedMlp(300, 200);
  scheduler::RankerMemoryShape shape;
  shape.rows = train.num_rows();
  shape.feature_nnz = train.features.nnz();
  shape.label_nnz = train.labels.nnz();
  shape.holdout_rows = 100;
  shape.shortlist = 50;
  shape.pairs = bound;
  shape.threads = 2;
  const scheduler::RankerMemory planned = scheduler::PlanRankerMemory(mlp.shape, shape);
  kernels::LinearRanker built = kernels::BuildLinearRanker(train, UINT64_MAX);
  ASSERT_EQ(built.num_pairs(), pairs);
  const uint64_t held = built.pair_label.size() * 4 + built.weight.size() * 4 + built.feature_ptr.size() * 8 +
                        built.bias.size() * 4;
  shape.pairs = pairs;
  EXPECT_EQ(scheduler::PlanRankerMemory(mlp.shape, shape).model, held) << "the count gives the ranker's bytes";
  EXPECT_GE(planned.model, held);
  EXPECT_EQ(planned.model - held, (bound - pairs) * 8);
  kernels::AddDenseLookups(&built, kernels::kRankerDenseLookupBytes);
  EXPECT_GE(planned.dense, built.dense_offset.size() * 4 + built.dense_row.size() * 4);
  const std::vector<uint32_t> shortlists = engine::TopLabels(mlp, train, 50);
  EXPECT_EQ(planned.shortlists, shortlists.size() * 4);
  const kernels::RankerDualReport solved =
      kernels::TrainRankerDual(&built, train.features, train.labels, shortlists.data(), 50, {});
  EXPECT_GE(planned.solver, solved.instances * 5);
  EXPECT_EQ(planned.mlp, mlp.shape.NumParameters() * 4);
  EXPECT_GE(planned.total(), planned.mlp + planned.shortlists + planned.model + planned.dense + planned.solver);
  // In the run's plan: the larger of training and the stage after it, which the plan says.
  scheduler::MemoryPlan plan;
  plan.global_model = 1 << 20;
  EXPECT_EQ(plan.host_total(), uint64_t(1) << 20);
  plan.ranker = planned;
  EXPECT_EQ(plan.host_total(), std::max<uint64_t>(1 << 20, planned.total()));
  EXPECT_NE(plan.ToString().find("the ranker's stage after training"), std::string::npos) << plan.ToString();
  // By folds, the trained MLP is kept while each fold trains as the run did, and beside its ranker.
  plan.ranker.by_folds = true;
  EXPECT_EQ(plan.host_total(), std::max<uint64_t>((1 << 20) + planned.mlp, planned.total() + planned.mlp));
  EXPECT_NE(plan.ToString().find("by folds"), std::string::npos) << plan.ToString();
}

// Issue 61, point 2: 128.6 s went into a ranker that was then dropped. The labels the held-out
// rows read are solved first; a blend of 0 chosen on them ends the stage before the others.
TEST(RankerStage, ABlendOfZeroEndsTheStageBeforeTheLabelsTheHeldOutRowsDoNotRead) {
  const data::Dataset train = SeparableRows(800, 100, 1);
  // Held-out rows without labels: every blend scores 0, and ties go to the MLP alone.
  std::vector<testing::DatasetRow> unlabelled(150);
  for (uint32_t r = 0; r < 150; ++r) unlabelled[r].features = {{r % 100, 1.0f}};
  const data::Dataset holdout = testing::MakeDataset(unlabelled, 200, 100);
  const kernels::Model<float> mlp = UntrainedMlp(200, 100);
  RankerOptions options;
  options.shortlist = 5;
  const RankerStageResult result = TrainShortlistRanker(mlp, train, &holdout, options);
  EXPECT_FALSE(result.stopped);
  EXPECT_EQ(result.ranker, nullptr);
  EXPECT_EQ(result.report.choice.blend, 0.0f);
  std::set<uint32_t> read;
  const engine::Prediction top = engine::Predict(mlp, holdout, 5);
  read.insert(top.labels.begin(), top.labels.end());
  ASSERT_LT(read.size(), 100u);
  EXPECT_EQ(result.report.labels_skipped, 100u - read.size());
  EXPECT_LE(result.report.solver.labels_solved, read.size());
  // With a blend that reads the ranker, every label is solved, as by one solve.
  const data::Dataset labelled = SeparableRows(200, 100, 2);
  const RankerStageResult kept = TrainShortlistRanker(mlp, train, &labelled, options);
  ASSERT_NE(kept.ranker, nullptr);
  EXPECT_EQ(kept.report.labels_skipped, 0u);
  kernels::LinearRanker whole = kernels::BuildLinearRanker(train, UINT64_MAX);
  const std::vector<uint32_t> shortlists = engine::TopLabels(mlp, train, 5);
  const kernels::RankerDualReport all =
      kernels::TrainRankerDual(&whole, train.features, train.labels, shortlists.data(), 5, {});
  EXPECT_EQ(kept.ranker->linear.weight, whole.weight);
  EXPECT_EQ(kept.ranker->linear.bias, whole.bias);
  EXPECT_EQ(kept.report.solver.labels_solved, all.labels_solved);
  EXPECT_EQ(kept.report.solver.mean_passes, all.mean_passes);
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
    if (at <= checks / 2) {
      EXPECT_LT(asked.load(), checks) << "went on past the stop at check " << at;
    }
  }
}

}  // namespace
}  // namespace xmlt::run
