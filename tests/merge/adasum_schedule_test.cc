// The pairwise tree as the GPUs' reduce-scatter (merge::AdasumReduceScatter): the halving of the
// tree's operands level by level, and the result's slices, for 1..9 replicas.
#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include "merge/adasum.h"

namespace xmlt::merge {
namespace {

TEST(AdasumReduceScatter, ThreeReplicasFoldThePairThenHalve) {
  const AdasumSchedule s = AdasumReduceScatter(3, 8);
  ASSERT_EQ(s.levels.size(), 2u);
  // The fold: replica 0 combines replica 1's values whole, and gives [4, 8) away next.
  ASSERT_EQ(s.levels[0].size(), 1u);
  const AdasumStep& fold = s.levels[0][0];
  EXPECT_EQ(fold.replica, 0u);
  EXPECT_EQ(fold.partner, 1u);
  EXPECT_TRUE(fold.left);
  EXPECT_EQ(fold.begin, 0u);
  EXPECT_EQ(fold.end, 8u);
  EXPECT_EQ(fold.sent_begin, 4u);
  EXPECT_EQ(fold.sent_end, 8u);
  // Then 0 (a) and 2 (b) each keep a half; the dots summed over both.
  ASSERT_EQ(s.levels[1].size(), 2u);
  for (const AdasumStep& step : s.levels[1]) EXPECT_EQ(step.group, (std::vector<size_t>{0, 2}));
  EXPECT_EQ(s.levels[1][0].replica, 0u);
  EXPECT_EQ(s.levels[1][0].end, 4u);
  EXPECT_EQ(s.levels[1][1].replica, 2u);
  EXPECT_EQ(s.levels[1][1].begin, 4u);
  ASSERT_EQ(s.slices.size(), 2u);
  EXPECT_EQ(s.slices[0].replica, 0u);
  EXPECT_EQ(s.slices[1].replica, 2u);
}

TEST(AdasumReduceScatter, SlicesCoverTheModelOnceOnePerOperand) {
  for (size_t n = 1; n <= 9; ++n)
    for (size_t count : {0, 1, 5, 64}) {
      const AdasumSchedule s = AdasumReduceScatter(n, count);
      EXPECT_EQ(s.levels.size(), PairwiseTreeLevels(n).size()) << n;
      size_t power = 1;
      while (power * 2 <= n) power *= 2;
      ASSERT_EQ(s.slices.size(), power) << n;
      std::vector<AdasumSlice> slices = s.slices;
      std::sort(slices.begin(), slices.end(), [](const AdasumSlice& a, const AdasumSlice& b) {
        return a.begin < b.begin || (a.begin == b.begin && a.end < b.end);
      });
      size_t at = 0;
      for (const AdasumSlice& slice : slices) {
        EXPECT_EQ(slice.begin, at) << n << " replicas, " << count << " values";
        at = slice.end;
      }
      EXPECT_EQ(at, count) << n;
      for (const std::vector<AdasumStep>& level : s.levels)
        for (const AdasumStep& step : level) {
          EXPECT_LE(step.begin, step.end);
          EXPECT_NE(std::find(step.group.begin(), step.group.end(), step.replica), step.group.end());
          if (step.sent_end > step.sent_begin) {
            EXPECT_GE(step.sent_begin, step.begin);
            EXPECT_LE(step.sent_end, step.end);
          }
        }
    }
}

}  // namespace
}  // namespace xmlt::merge
