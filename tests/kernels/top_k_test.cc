// Top-k against a full sort, with ties and k beyond the label count.
#include <gtest/gtest.h>

#include <algorithm>
#include <limits>
#include <numeric>
#include <random>

#include "kernels/cpu/top_k.h"

namespace xmlt::kernels::cpu {
namespace {

TEST(TopK, MatchesStableSortWithLowerIdWinningTies) {
  for (uint64_t labels : {1ull, 4ull, 5ull, 37ull, 1000ull}) {
    const uint32_t rows = 9, k = 5;
    std::mt19937_64 rng(labels);
    std::vector<float> scores(rows * labels);
    for (float& s : scores) s = float(rng() % 7);  // few distinct values: many ties
    std::vector<uint32_t> top(rows * k);
    std::vector<float> top_scores(rows * k);
    TopK<float>(scores.data(), rows, labels, k, top.data(), top_scores.data());
    for (uint32_t r = 0; r < rows; ++r) {
      std::vector<uint32_t> order(labels);
      std::iota(order.begin(), order.end(), 0u);
      const float* row = scores.data() + r * labels;
      std::stable_sort(order.begin(), order.end(), [row](uint32_t a, uint32_t b) { return row[a] > row[b]; });
      for (uint32_t i = 0; i < k; ++i) {
        if (i < labels) {
          EXPECT_EQ(top[r * k + i], order[i]) << "labels " << labels << " row " << r << " rank " << i;
          EXPECT_EQ(top_scores[r * k + i], row[order[i]]);
        } else {
          EXPECT_EQ(top[r * k + i], UINT32_MAX);
        }
      }
    }
  }
}

// A NaN among a row's first k scores once froze the list (nothing compares greater than NaN), so
// the top-1 of {NaN, 1, 2} was label 0. NaN now ranks as -infinity and comes out as -infinity.
TEST(TopK, NaNRanksAsMinusInfinityWhereverItIs) {
  const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
  const std::vector<float> scores = {nan, 1, 2, nan, 0.5f,  // NaNs first and in the middle
                                     nan, nan, nan, nan, nan,
                                     -inf, nan, -inf, 3, nan};
  const uint32_t rows = 3, labels = 5, k = 3;
  std::vector<uint32_t> top(rows * k);
  std::vector<float> top_scores(rows * k);
  TopK<float>(scores.data(), rows, labels, k, top.data(), top_scores.data());
  EXPECT_EQ(std::vector<uint32_t>(top.begin(), top.begin() + 3), (std::vector<uint32_t>{2, 1, 4}));
  EXPECT_EQ(std::vector<float>(top_scores.begin(), top_scores.begin() + 3), (std::vector<float>{2, 1, 0.5f}));
  // All NaN: every score ties at -infinity, the lower ids first.
  EXPECT_EQ(std::vector<uint32_t>(top.begin() + 3, top.begin() + 6), (std::vector<uint32_t>{0, 1, 2}));
  for (int i = 3; i < 6; ++i) EXPECT_EQ(top_scores[i], -inf);
  // -inf and NaN tie: 3 first, then the lowest ids among the rest.
  EXPECT_EQ(std::vector<uint32_t>(top.begin() + 6, top.end()), (std::vector<uint32_t>{3, 0, 1}));
}

}  // namespace
}  // namespace xmlt::kernels::cpu
