// The ranker planned before training (run/ranker_plan.h): its pairs bounded first and counted
// exactly only where the bound does not fit the memory, as at Delicious-200K's shape, where the
// bound (3.58 G pairs) would need 28 GiB and the 1.15 G counted fit a 24 GiB machine.
#include <gtest/gtest.h>

#include <vector>

#include "run/fold_blend_choice.h"
#include "run/ranker_plan.h"
#include "tests/make_dataset.h"

namespace xmlt::run {
namespace {

// 200 identical rows of 50 features and 20 labels: 1,000 pairs, where the bound says 100,000.
data::Dataset OverlappingRows() {
  testing::DatasetRow row;
  for (uint32_t f = 0; f < 50; ++f) row.features.push_back({f * 7, 1.0f});
  for (uint32_t l = 0; l < 20; ++l) row.labels.push_back(l * 3);
  return testing::MakeDataset(std::vector<testing::DatasetRow>(200, row), 10000, 2000);
}

kernels::ModelShape Shape(const data::Dataset& rows) { return {rows.num_features(), {16}, rows.num_labels()}; }

// 200 rows are too few to hold a tenth out: the blend is chosen by folds, every row scored.
uint64_t StageBytes(const data::Dataset& rows, uint64_t pairs) {
  return RankerStageMemory(RankerOptions{}, Shape(rows), rows, rows.num_rows(), rows.num_rows(), pairs, true).total();
}

TEST(RankerPlan, CountsThePairsExactlyWhereTheBoundDoesNotFit) {
  const data::Dataset rows = OverlappingRows();
  ASSERT_EQ(RankerPairBound(rows), 100000u);
  ASSERT_GT(BlendFolds(RankerOptions{}, rows.num_rows()), 0u);
  const uint64_t exact = StageBytes(rows, 1000), bounded = StageBytes(rows, 100000);
  ASSERT_LT(exact, bounded);
  // Memory enough for the bound: planned on it, no count.
  RankerPlan plan = PlanRanker(RankerOptions{}, Shape(rows), rows, bounded);
  EXPECT_TRUE(plan.fits());
  EXPECT_EQ(plan.pairs, 100000u);
  // Between the two: the exact count decides, and fits.
  plan = PlanRanker(RankerOptions{}, Shape(rows), rows, (exact + bounded) / 2);
  EXPECT_TRUE(plan.fits());
  EXPECT_EQ(plan.pairs, 1000u);
  EXPECT_EQ(plan.memory.total(), exact);
  // Below even the exact count's stage: no ranker, for want of memory.
  plan = PlanRanker(RankerOptions{}, Shape(rows), rows, exact - 1);
  EXPECT_EQ(plan.verdict, RankerPlan::Verdict::kTooLittleMemory);
}

TEST(RankerPlan, ThePairLimitIsTheSolvers32BitIdsNot2To28) {
  // Delicious-200K's 1.15 G pairs are within it; what decides there is the memory.
  EXPECT_GT(kMaxRankerPairs, uint64_t{1150000000});
  EXPECT_LT(kMaxRankerPairs, uint64_t{1} << 32);
}

}  // namespace
}  // namespace xmlt::run
