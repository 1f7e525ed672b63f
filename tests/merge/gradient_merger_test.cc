// Synchronous gradient aggregation on cases worked out by hand: each replica is built as
// w - lr g_i, and the merge must give w - lr mean(g) plus the global momentum.
#include <gtest/gtest.h>

#include <cmath>
#include <stdexcept>
#include <vector>

#include "merge/merger.h"
#include "tests/merge/merge_test_support.h"

namespace xmlt::merge {
namespace {

using testing::ExpectModel;

// One plain SGD step of each device from `start` with the same learning rate.
struct Steps {
  std::vector<std::vector<float>> data;
  Steps(const std::vector<float>& start, float lr, const std::vector<std::vector<float>>& grads) {
    for (const auto& g : grads) {
      std::vector<float> w = start;
      for (size_t j = 0; j < w.size(); ++j) w[j] -= lr * g[j];
      data.push_back(std::move(w));
    }
  }
  ReplicaSet View() {
    ReplicaSet set;
    set.size = data[0].size();
    for (auto& d : data) set.members.push_back({d.data()});
    return set;
  }
};

MergeInput OneStepEach(size_t n) {
  MergeInput input;
  input.batch.assign(n, 32);
  input.lr.assign(n, 0.1);
  input.updates.assign(n, 1);
  return input;
}

// lr = 0.1, gamma = 0.9, from w = w_p = {1, 2, 3}.
//  1st: g = {1, 0, -2}, {3, -4, 0}: mean g = {2, -2, -1}; w' = {1 - 0.2, 2 + 0.2, 3 + 0.1}
//       = {0.8, 2.2, 3.1} (no momentum yet); w_p = {1, 2, 3}.
//  2nd: g = {2, 2, 0}, {0, -2, 4}: mean g = {1, 0, 2}; w - lr mean g = {0.7, 2.2, 2.9};
//       + 0.9 ({0.8, 2.2, 3.1} - {1, 2, 3}) = {-0.18, 0.18, 0.09} -> {0.52, 2.38, 2.99};
//       w_p = {0.8, 2.2, 3.1}.
TEST(GradientMerger, AveragedGradientWithMomentumOverTwoRounds) {
  MergeOptions options;
  options.momentum = 0.9;
  auto merger = MakeGradientMerger(options, MakeCpuPartitionedSumCollective());
  EXPECT_EQ("gradient", merger->name());
  GlobalModel global{{1, 2, 3}, {1, 2, 3}};
  Steps r(global.current(), 0.1f, {{1, 0, -2}, {3, -4, 0}});
  MergeOutcome out = merger->Merge(r.View(), OneStepEach(2), &global);
  ASSERT_EQ(2u, out.weights.size());
  EXPECT_DOUBLE_EQ(0.5, out.weights[0]);
  EXPECT_DOUBLE_EQ(0.5, out.weights[1]);
  EXPECT_FALSE(out.perturbed);
  ExpectModel({0.8f, 2.2f, 3.1f}, global.current());
  ExpectModel({1, 2, 3}, global.previous());
  for (const auto& replica : r.data) ExpectModel({0.8f, 2.2f, 3.1f}, replica);

  r = Steps(global.current(), 0.1f, {{2, 2, 0}, {0, -2, 4}});
  out = merger->Merge(r.View(), OneStepEach(2), &global);
  ExpectModel({0.52f, 2.38f, 2.99f}, global.current());
  ExpectModel({0.8f, 2.2f, 3.1f}, global.previous());
  for (const auto& replica : r.data) ExpectModel({0.52f, 2.38f, 2.99f}, replica);
}

// Nesterov, gamma = 0.5, lr = 0.1: w = {1, 2}, w_p = {0, 2}: the look-ahead is {1.5, 2}. Steps
// from there with g = {1, 2}, {3, 0} (mean {2, 1}): w' = {1.3, 1.9}, w_p = {1, 2}; the replicas
// restart from {1.3 + 0.5 * 0.3, 1.9 - 0.5 * 0.1} = {1.45, 1.85}.
TEST(GradientMerger, NesterovStepsFromTheLookAhead) {
  MergeOptions options;
  options.momentum = 0.5;
  options.momentum_mode = MomentumMode::kNesterov;
  auto merger = MakeGradientMerger(options, MakeCpuPartitionedSumCollective());
  GlobalModel global{{1, 2}, {0, 2}};
  Steps r({1.5f, 2}, 0.1f, {{1, 2}, {3, 0}});
  merger->Merge(r.View(), OneStepEach(2), &global);
  ExpectModel({1.3f, 1.9f}, global.current());
  ExpectModel({1, 2}, global.previous());
  for (const auto& replica : r.data) ExpectModel({1.45f, 1.85f}, replica);
}

TEST(GradientMerger, NeedsAtMostOneUpdatePerReplica) {
  MergeOptions options;
  auto merger = MakeGradientMerger(options, MakeCpuPartitionedSumCollective());
  GlobalModel global{{1, 2}, {1, 2}};
  Steps r(global.current(), 0.1f, {{1, 1}, {2, 2}});
  const std::vector<std::vector<float>> before = r.data;
  for (std::vector<uint64_t> updates : {std::vector<uint64_t>{1, 2},
                                        std::vector<uint64_t>{0, 0},
                                        std::vector<uint64_t>{2, 2}}) {
    MergeInput input = OneStepEach(2);
    input.updates = updates;
    EXPECT_THROW(merger->Merge(r.View(), input, &global), std::invalid_argument);
  }
  MergeInput three = OneStepEach(2);
  three.lr = {0.1, 0.1, 0.1};
  EXPECT_THROW(merger->Merge(r.View(), three, &global), std::invalid_argument);
  EXPECT_THROW(MakeGradientMerger(options, nullptr), std::invalid_argument);
  EXPECT_EQ(before, r.data);
  ExpectModel({1, 2}, global.current());
  // Without update counts there is nothing to check.
  EXPECT_NO_THROW(merger->Merge(r.View(), MergeInput{}, &global));
}

// A round with fewer rows than devices: the device that sat out (u = 0, still at w) is left out
// of the mean. Replica 1 stepped to (1.2, 1.8) from w = (1, 2): w' = (1.2, 1.8) with gamma 0.
TEST(GradientMerger, DevicesThatSatOutAreLeftOutOfTheMean) {
  MergeOptions options;
  options.momentum = 0;
  auto merger = MakeGradientMerger(options, MakeCpuPartitionedSumCollective());
  GlobalModel global{{1, 2}, {1, 2}};
  std::vector<std::vector<float>> data = {{1, 2}, {1.2f, 1.8f}};
  ReplicaSet replicas;
  replicas.size = 2;
  for (auto& d : data) replicas.members.push_back({d.data()});
  MergeInput input = OneStepEach(2);
  input.updates = {0, 1};
  const MergeOutcome outcome = merger->Merge(replicas, input, &global);
  EXPECT_EQ(outcome.weights, (std::vector<double>{0, 1}));
  ExpectModel({1.2f, 1.8f}, global.current());
  for (const auto& replica : data) ExpectModel({1.2f, 1.8f}, replica);
}

}  // namespace
}  // namespace xmlt::merge
