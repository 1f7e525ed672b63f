// Nesterov (DANA-style look-ahead) global momentum for the normalized and average merges, on cases
// worked out by hand: replicas start at the look-ahead, w' is their combination with no momentum
// term, and every replica restarts from the next look-ahead w' + gamma (w' - w).
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "merge/global_momentum.h"
#include "merge/merger.h"
#include "tests/merge/merge_test_support.h"

namespace xmlt::merge {
namespace {

using testing::Replicas;
using testing::ExpectModel;

void ExpectEveryReplica(const Replicas& r, const std::vector<float>& expected) {
  for (size_t i = 0; i < r.data.size(); ++i) {
    SCOPED_TRACE(::testing::Message() << "replica " << i);
    ExpectModel(expected, r.data[i]);
  }
}

MergeOptions Nesterov(double gamma) {
  MergeOptions options;
  options.momentum = gamma;
  options.momentum_mode = MomentumMode::kNesterov;
  return options;
}

MergeInput Input(std::vector<double> batch, std::vector<uint64_t> updates) {
  MergeInput input;
  input.batch = std::move(batch);
  input.updates = std::move(updates);
  return input;
}

TEST(MomentumModes, HeavyIsTheDefault) {
  EXPECT_EQ(MomentumMode::kHeavy, MergeOptions{}.momentum_mode);
}

// gamma = 0.5, two devices, from w = w_p = {1, -1} (the first round: look-ahead = w).
//  1st: replicas trained from {1, -1} to {3, 1} and {1, 5}; u equal, b = {1, 3}: alpha = {1/4, 3/4},
//       w' = {0.75 + 0.75, 0.25 + 3.75} = {1.5, 4} (no momentum term); w_p = {1, -1};
//       look-ahead {1.5 + 0.5 * 0.5, 4 + 0.5 * 5} = {1.75, 6.5}.
//  2nd: replicas trained from {1.75, 6.5} to {2, 6} and {1, 7}; u = {3, 1}: alpha = {3/4, 1/4},
//       w' = {1.5 + 0.25, 4.5 + 1.75} = {1.75, 6.25}; w_p = {1.5, 4};
//       look-ahead {1.75 + 0.5 * 0.25, 6.25 + 0.5 * 2.25} = {1.875, 7.375}.
// The norms are large: no perturbation.
TEST(MomentumModes, NormalizedNesterovOverTwoRounds) {
  auto merger = MakeNormalizedMerger(Nesterov(0.5), MakeCpuPartitionedSumCollective());
  GlobalModel global{{1, -1}, {1, -1}};
  Replicas r{{{3, 1}, {1, 5}}};
  MergeOutcome out = merger->Merge(r.View(), Input({1, 3}, {2, 2}), &global);
  EXPECT_FALSE(out.perturbed);
  ExpectModel({1.5, 4}, global.current());
  ExpectModel({1, -1}, global.previous());
  ExpectEveryReplica(r, {1.75, 6.5});

  r.data = {{2, 6}, {1, 7}};
  out = merger->Merge(r.View(), Input({1, 3}, {3, 1}), &global);
  EXPECT_FALSE(out.perturbed);
  ExpectModel({1.75, 6.25}, global.current());
  ExpectModel({1.5, 4}, global.previous());
  ExpectEveryReplica(r, {1.875, 7.375});
}

// gamma = 0.9, two devices, from w = w_p = {0, 2, -4}.
//  1st: replicas {1, 2, -3} and {3, 4, -5}: w' = mean = {2, 3, -4}; w_p = {0, 2, -4};
//       look-ahead {2 + 0.9 * 2, 3 + 0.9 * 1, -4 + 0.9 * 0} = {3.8, 3.9, -4}.
//  2nd: replicas trained from there to {4, 4, -4} and {3, 5, -2}: w' = {3.5, 4.5, -3};
//       w_p = {2, 3, -4}; look-ahead {3.5 + 0.9 * 1.5, 4.5 + 0.9 * 1.5, -3 + 0.9 * 1}
//       = {4.85, 5.85, -2.1}.
TEST(MomentumModes, AverageNesterovOverTwoRounds) {
  auto merger = MakeAverageMerger(Nesterov(0.9), MakeCpuPartitionedSumCollective());
  GlobalModel global{{0, 2, -4}, {0, 2, -4}};
  Replicas r{{{1, 2, -3}, {3, 4, -5}}};
  MergeOutcome out = merger->Merge(r.View(), MergeInput{}, &global);
  EXPECT_NEAR(0.5, out.weights[0], 1e-12);
  ExpectModel({2, 3, -4}, global.current());
  ExpectModel({0, 2, -4}, global.previous());
  ExpectEveryReplica(r, {3.8f, 3.9f, -4});

  r.data = {{4, 4, -4}, {3, 5, -2}};
  out = merger->Merge(r.View(), MergeInput{}, &global);
  ExpectModel({3.5, 4.5, -3}, global.current());
  ExpectModel({2, 3, -4}, global.previous());
  ExpectEveryReplica(r, {4.85f, 5.85f, -2.1f});
}

// The same replicas under kHeavy get the momentum term in w' and restart from w' itself:
// mean {2, 3, -4} + 0.9 ({0, 2, -4} - {-1, 2, -5}) = {2.9, 3, -3.1}.
TEST(MomentumModes, HeavyAddsTheMomentumToTheGlobalModel) {
  MergeOptions options;
  options.momentum = 0.9;
  auto merger = MakeAverageMerger(options, MakeCpuPartitionedSumCollective());
  GlobalModel global{{0, 2, -4}, {-1, 2, -5}};
  Replicas r{{{1, 2, -3}, {3, 4, -5}}};
  merger->Merge(r.View(), MergeInput{}, &global);
  ExpectModel({2.9f, 3, -3.1f}, global.current());
  ExpectModel({0, 2, -4}, global.previous());
  ExpectEveryReplica(r, {2.9f, 3, -3.1f});
}

// Several partitions and blocks (the partitioned sum's block is 4096 parameters): the finish step
// must index the global model at each block's offset. w[j] = j, w_p[j] = j - 2, replicas j + 1
// and j + 3: w' = j + 2, w_p <- j, look-ahead j + 2 + 0.5 * 2 = j + 3 (all exact in float).
TEST(MomentumModes, NesterovFinishFollowsBlockOffsets) {
  const size_t size = 10007;
  GlobalModel global{std::vector<float>(size), std::vector<float>(size)};
  Replicas r{{std::vector<float>(size), std::vector<float>(size)}};
  std::vector<float> merged(size), ahead(size), old(size);
  for (size_t j = 0; j < size; ++j) {
    const float x = static_cast<float>(j);
    global.MutableCurrent()[j] = x;
    global.MutablePrevious()[j] = x - 2;
    r.data[0][j] = x + 1;
    r.data[1][j] = x + 3;
    merged[j] = x + 2;
    ahead[j] = x + 3;
    old[j] = x;
  }
  MergeWithGlobalMomentum(*MakeCpuPartitionedSumCollective(3), r.View(), {0.5, 0.5}, 0.5, &global,
                          MomentumMode::kNesterov);
  ExpectModel(merged, global.current());
  ExpectModel(old, global.previous());
  ExpectEveryReplica(r, ahead);
}

}  // namespace
}  // namespace xmlt::merge
