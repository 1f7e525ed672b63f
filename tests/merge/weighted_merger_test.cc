// The weighted merge skeleton with a rule of the test's own: what it checks before asking for the
// weights, that a rule that throws leaves everything untouched, and that it applies what the rule
// returns under the global momentum rule.
#include <gtest/gtest.h>

#include <stdexcept>
#include <vector>

#include "merge/weighted_merger.h"
#include "tests/merge/merge_test_support.h"

namespace xmlt::merge {
namespace {

using testing::ExpectModel;
using testing::Replicas;

// Weights 1/4 and 3/4, counting its calls.
WeightRule QuarterRule(int* calls) {
  return [calls](const ReplicaSet&, const MergeInput&, Collective&) {
    ++*calls;
    MergeOutcome outcome;
    outcome.weights = {0.25, 0.75};
    return outcome;
  };
}

// 0.25 {4, 8} + 0.75 {0, 4} = {1, 5}; + 0.5 ({2, 2} - {0, 4}) = {2, 4}.
TEST(WeightedMerger, AppliesTheRulesWeightsUnderTheGlobalMomentum) {
  int calls = 0;
  MergeOptions options;
  options.momentum = 0.5;
  auto merger = MakeWeightedMerger("quarter", options, MakeCpuPartitionedSumCollective(),
                                   QuarterRule(&calls));
  EXPECT_EQ("quarter", merger->name());
  Replicas r{{{4, 8}, {0, 4}}, {}};
  GlobalModel global{{2, 2}, {0, 4}};
  const MergeOutcome out = merger->Merge(r.View(), MergeInput{}, &global);
  EXPECT_EQ(1, calls);
  EXPECT_EQ((std::vector<double>{0.25, 0.75}), out.weights);
  ExpectModel({2, 4}, global.current());
  ExpectModel({2, 2}, global.previous());
  ExpectModel({2, 4}, r.data[0]);
  ExpectModel({2, 4}, r.data[1]);
}

TEST(WeightedMerger, ChecksBeforeAskingForTheWeights) {
  int calls = 0;
  auto merger = MakeWeightedMerger("quarter", MergeOptions{}, MakeCpuPartitionedSumCollective(),
                                   QuarterRule(&calls));
  Replicas r{{{1, 2}, {3, 4}}, {}};
  GlobalModel global{{0, 0}, {0, 0}};
  MergeInput three;
  three.lr = {0.1, 0.1, 0.1};
  EXPECT_THROW(merger->Merge(r.View(), three, &global), std::invalid_argument);
  EXPECT_THROW(merger->Merge(r.View(), MergeInput{}, nullptr), std::invalid_argument);
  GlobalModel small{{0}, {0}};
  EXPECT_THROW(merger->Merge(r.View(), MergeInput{}, &small), std::invalid_argument);
  EXPECT_THROW(merger->Merge(ReplicaSet{}, MergeInput{}, &global), std::invalid_argument);
  EXPECT_EQ(0, calls);
  EXPECT_THROW(MakeWeightedMerger("quarter", MergeOptions{}, nullptr, QuarterRule(&calls)),
               std::invalid_argument);
}

TEST(WeightedMerger, ARuleThatThrowsLeavesTheModelAndTheReplicasUntouched) {
  auto merger = MakeWeightedMerger(
      "refusing", MergeOptions{}, MakeCpuPartitionedSumCollective(),
      [](const ReplicaSet&, const MergeInput&, Collective&) -> MergeOutcome {
        throw std::invalid_argument("refused");
      });
  Replicas r{{{1, 2}, {3, 4}}, {}};
  GlobalModel global{{5, 6}, {7, 8}};
  EXPECT_THROW(merger->Merge(r.View(), MergeInput{}, &global), std::invalid_argument);
  EXPECT_EQ((std::vector<std::vector<float>>{{1, 2}, {3, 4}}), r.data);
  EXPECT_EQ((std::vector<float>{5, 6}), global.current());
  EXPECT_EQ((std::vector<float>{7, 8}), global.previous());
}

}  // namespace
}  // namespace xmlt::merge
