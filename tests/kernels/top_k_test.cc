// Top-k against a full sort, with ties and k beyond the label count.
#include <gtest/gtest.h>

#include <algorithm>
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

}  // namespace
}  // namespace xmlt::kernels::cpu
