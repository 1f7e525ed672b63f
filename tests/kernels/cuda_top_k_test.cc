// cuda::TopK against cpu::TopK: ties (few distinct scores), NaN and infinite scores, k beyond the
// label count, row counts that do not fill the last block, label counts around the warp width, and
// both paths: a warp per row up to k = 32, a block's radix select beyond (the ranker's shortlists:
// 33, 50, 100, 1000 and the largest, 1024).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "kernels/cpu/top_k.h"
#include "kernels/cuda/device_buffer.h"
#include "kernels/cuda/top_k.h"
#include "tests/kernels/cuda_test_gate.h"

namespace xmlt::kernels::cuda {
namespace {

enum class Scores { kDistinct, kManyTies, kWithNaNs };

// Each row's k labels and scores, rows x k.
struct TopLists {
  std::vector<uint32_t> labels;
  std::vector<float> scores;
};

TopLists CpuTopK(const std::vector<float>& scores, uint32_t rows, uint64_t labels, uint32_t k) {
  TopLists top{std::vector<uint32_t>(rows * k), std::vector<float>(rows * k)};
  cpu::TopK<float>(scores.data(), rows, labels, k, top.labels.data(), top.scores.data());
  return top;
}

// cuda::TopK over scores already in device memory, waited for and copied back.
TopLists GpuTopK(const float* device_scores, uint32_t rows, uint64_t labels, uint32_t k) {
  DeviceBuffer<uint32_t> top(rows * k);
  DeviceBuffer<float> top_scores(rows * k);
  TopK(device_scores, rows, labels, k, top.data(), top_scores.data(), nullptr);
  XMLT_CUDA_CHECK(cudaDeviceSynchronize());
  return {top.ToHost(), top_scores.ToHost()};
}

void CheckTopK(Scores kind) {
  for (uint64_t labels : {1ull, 4ull, 5ull, 31ull, 32ull, 33ull, 37ull, 1000ull, 4099ull}) {
    for (uint32_t k : {1u, 5u, 32u, 33u, 50u, 100u, 1000u, kMaxTopK}) {
      // The block path's radix passes run a fiber per thread here: fewer rows keep it quick.
      const uint32_t rows = k > kMaxWarpTopK ? 3 : 9;
      std::mt19937_64 rng(labels * 100 + k);
      std::normal_distribution<float> normal(0.0f, 1.0f);
      std::vector<float> scores(rows * labels);
      for (float& s : scores) {
        s = kind == Scores::kManyTies ? float(rng() % 7) : normal(rng);
        // A fifth NaN and a tenth -inf (rows entirely NaN among them for one label).
        if (kind == Scores::kWithNaNs && rng() % 5 == 0) s = std::nanf("");
        if (kind == Scores::kWithNaNs && rng() % 10 == 0) s = -INFINITY;
      }
      const TopLists cpu = CpuTopK(scores, rows, labels, k);
      const std::vector<uint32_t>& expected = cpu.labels;
      const std::vector<float>& expected_scores = cpu.scores;

      DeviceBuffer<float> device_scores = DeviceBuffer<float>::FromHost(scores);
      const TopLists gpu = GpuTopK(device_scores.data(), rows, labels, k);
      const std::vector<uint32_t>& actual = gpu.labels;
      const std::vector<float>& actual_scores = gpu.scores;
      for (size_t i = 0; i < actual.size(); ++i) {
        ASSERT_EQ(actual[i], expected[i]) << "labels " << labels << " k " << k << " slot " << i;
        ASSERT_EQ(actual_scores[i], expected_scores[i]) << "labels " << labels << " k " << k;  // no NaN comes out
      }
    }
  }
}

TEST(CudaTopK, MatchesCpuWithTiesToTheLowerId) {
  XMLT_SKIP_WITHOUT_GPU();
  CheckTopK(Scores::kManyTies);
}

TEST(CudaTopK, MatchesCpuOnDistinctScores) {
  XMLT_SKIP_WITHOUT_GPU();
  CheckTopK(Scores::kDistinct);
}

TEST(CudaTopK, MatchesCpuWithNaNsRankedAsMinusInfinity) {
  XMLT_SKIP_WITHOUT_GPU();
  CheckTopK(Scores::kWithNaNs);
}

// Ties across the radix select's cut: every score equal but a few above, so the k-th best is a tie
// shared by thousands of labels, of which the lowest ids must be taken, in label order.
TEST(CudaTopK, BlockPathTakesTheLowestIdsOfATieAtTheCut) {
  XMLT_SKIP_WITHOUT_GPU();
  const uint64_t labels = 5000;
  const uint32_t rows = 2, k = 64;
  std::vector<float> scores(rows * labels, 0.5f);
  for (uint64_t j : {17ull, 4000ull, 4999ull}) scores[j] = 2.0f;
  scores[labels + 3] = -0.0f;  // the second row: -0 and +0 tie, as on the CPU
  for (uint64_t j = labels + 10; j < 2 * labels; ++j) scores[j] = 0.0f;
  const TopLists expected = CpuTopK(scores, rows, labels, k);
  DeviceBuffer<float> device_scores = DeviceBuffer<float>::FromHost(scores);
  const TopLists actual = GpuTopK(device_scores.data(), rows, labels, k);
  EXPECT_EQ(actual.labels, expected.labels);
  EXPECT_EQ(actual.scores, expected.scores);
  EXPECT_EQ(expected.labels[3], 0u);  // the first row: 17, 4000, 4999, then the ties from label 0
}

// The block path at Amazon-670K's label count, the ranker's shortlist depth and its deepest: the
// radix passes and the gather over 670,091 labels a row, ties among them.
TEST(CudaTopK, BlockPathAtTable1LabelCount) {
  XMLT_SKIP_WITHOUT_GPU();
  const uint64_t labels = 670091;
  const uint32_t rows = 2;
  std::mt19937_64 rng(7);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> scores(rows * labels);
  for (float& s : scores) s = std::round(normal(rng) * 64.0f) / 64.0f;  // many ties
  DeviceBuffer<float> device_scores = DeviceBuffer<float>::FromHost(scores);
  for (uint32_t k : {50u, 1000u}) {
    const TopLists expected = CpuTopK(scores, rows, labels, k);
    const TopLists actual = GpuTopK(device_scores.data(), rows, labels, k);
    EXPECT_EQ(actual.labels, expected.labels) << "k " << k;
    EXPECT_EQ(actual.scores, expected.scores) << "k " << k;
  }
}

TEST(CudaTopK, RejectsKAboveItsLimit) {
  XMLT_SKIP_WITHOUT_GPU();
  DeviceBuffer<float> scores(2000);
  DeviceBuffer<uint32_t> top(2000);
  EXPECT_THROW(TopK(scores.data(), 1, 2000, kMaxTopK + 1, top.data(), nullptr, nullptr), std::invalid_argument);
}

}  // namespace
}  // namespace xmlt::kernels::cuda
