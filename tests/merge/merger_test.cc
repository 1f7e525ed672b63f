// Algorithm 2 (normalized merge) and the elastic average on cases worked out by hand from the
// paper's pseudo-code: the expected numbers are written here, never recomputed by the code.
#include "merge/merger.h"
#include "tests/merge/merge_test_support.h"

#include <gtest/gtest.h>

#include <cmath>
#include <stdexcept>
#include <vector>

namespace xmlt::merge {
namespace {

using testing::Replicas;
using testing::ExpectModel;

// Replica i filled with values[i] everywhere.
Replicas Constant(const std::vector<float>& values, size_t size) {
  Replicas r;
  for (float v : values) r.data.emplace_back(size, v);
  return r;
}

GlobalModel Global(std::vector<float> current, std::vector<float> previous) {
  return GlobalModel{std::move(current), std::move(previous)};
}

void ExpectEveryReplica(const Replicas& r, const std::vector<float>& expected) {
  for (size_t i = 0; i < r.data.size(); ++i) {
    SCOPED_TRACE(::testing::Message() << "replica " << i);
    ExpectModel(expected, r.data[i]);
  }
}

void ExpectWeights(const std::vector<double>& expected, const std::vector<double>& got) {
  ASSERT_EQ(expected.size(), got.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(expected[i], got[i], 1e-12) << "alpha " << i;
}

// The paper's Algorithm 2 unless told otherwise: perturbed weights are not renormalized.
std::unique_ptr<Merger> Normalized(double momentum, double threshold = 0.1, double delta = 0.1,
                                   bool renormalize = false) {
  MergeOptions options;
  options.momentum = momentum;
  options.pert_threshold = threshold;
  options.pert_delta = delta;
  options.renormalize_perturbed = renormalize;
  return MakeNormalizedMerger(options, MakeCpuPartitionedSumCollective());
}

MergeInput Input(std::vector<double> batch, std::vector<uint64_t> updates) {
  MergeInput input;
  input.lr.assign(batch.size(), 0.01);
  input.batch = std::move(batch);
  input.updates = std::move(updates);
  return input;
}

TEST(NormalizedMerger, EqualUpdatesWeighByBatchSize) {
  // alpha = b / sum b = {100, 200, 100} / 400; ||r0|| / 4 = sqrt(30) / 4 > 0.1: no perturbation.
  Replicas r{{{1, 2, 3, 4}, {2, 2, 2, 2}, {0, 4, -4, 8}}, {}};
  GlobalModel global = Global({0, 0, 0, 0}, {0, 0, 0, 0});
  const MergeOutcome out =
      Normalized(0.0)->Merge(r.View(), Input({100, 200, 100}, {5, 5, 5}), &global);
  ExpectWeights({0.25, 0.5, 0.25}, out.weights);
  EXPECT_FALSE(out.perturbed);
  EXPECT_EQ(-1, out.most_updated);
  EXPECT_EQ(-1, out.least_updated);
  ExpectModel({1.25, 2.5, 0.75, 4}, global.current());
  ExpectModel({0, 0, 0, 0}, global.previous());
  ExpectEveryReplica(r, {1.25, 2.5, 0.75, 4});
}

TEST(NormalizedMerger, UnequalUpdatesWeighByUpdates) {
  // alpha = u / sum u = {10, 30, 20, 40} / 100, whatever b. ||r3|| / 1000 = 5 sqrt(1000) / 1000
  // = 0.158 >= 0.1: one unregularized replica blocks the perturbation.
  Replicas r = Constant({1, 2, 0.5, 5}, 1000);
  GlobalModel global = Global(std::vector<float>(1000, 0), std::vector<float>(1000, 0));
  const MergeOutcome out =
      Normalized(0.0)->Merge(r.View(), Input({64, 32, 48, 16}, {10, 30, 20, 40}), &global);
  ExpectWeights({0.1, 0.3, 0.2, 0.4}, out.weights);
  EXPECT_FALSE(out.perturbed);
  // 0.1 * 1 + 0.3 * 2 + 0.2 * 0.5 + 0.4 * 5
  ExpectEveryReplica(r, std::vector<float>(1000, 2.8f));
  ExpectModel(std::vector<float>(1000, 2.8f), global.current());
}

TEST(NormalizedMerger, PerturbsWhenEveryReplicaIsRegularized) {
  // Norms per parameter: {1, 2, 0.5, 1} * sqrt(1000) / 1000 = {0.032, 0.063, 0.016, 0.032} < 0.1.
  // r = argmax u = 3 and s = argmin u = 0: alpha_3 = 0.4 * 1.1, alpha_0 = 0.1 * 0.9.
  Replicas r = Constant({1, 2, 0.5, -1}, 1000);
  GlobalModel global = Global(std::vector<float>(1000, 0), std::vector<float>(1000, 0));
  const MergeOutcome out =
      Normalized(0.0)->Merge(r.View(), Input({64, 32, 48, 16}, {10, 30, 20, 40}), &global);
  ExpectWeights({0.09, 0.3, 0.2, 0.44}, out.weights);
  EXPECT_TRUE(out.perturbed);
  EXPECT_EQ(3, out.most_updated);
  EXPECT_EQ(0, out.least_updated);
  // Not renormalized: the weights sum to 1.03.
  EXPECT_NEAR(1.03, out.weights[0] + out.weights[1] + out.weights[2] + out.weights[3], 1e-12);
  // 0.09 * 1 + 0.3 * 2 + 0.2 * 0.5 + 0.44 * -1
  ExpectEveryReplica(r, std::vector<float>(1000, 0.35f));
}

// Reliability, second round, row 6: a mega-batch cut short by the run's end, in which only
// replica 0 stepped, was merged with weights (1.1, 0, 0) and scaled the model by 1.1. A replica
// that took no step blocks the perturbation; the weights stay u / sum u.
TEST(NormalizedMerger, AReplicaThatTookNoStepBlocksThePerturbation) {
  Replicas r = Constant({0.5f, 0.25f, 0.25f}, 1000);  // regularized: 0.016 per parameter and less
  GlobalModel global = Global(std::vector<float>(1000, 0), std::vector<float>(1000, 0));
  const MergeOutcome out = Normalized(0.0)->Merge(r.View(), Input({32, 32, 32}, {1, 0, 0}), &global);
  ExpectWeights({1, 0, 0}, out.weights);
  EXPECT_FALSE(out.perturbed);
  ExpectEveryReplica(r, std::vector<float>(1000, 0.5f));
  // One step each is enough for it to apply again.
  Replicas stepped = Constant({0.5f, 0.25f, 0.25f}, 1000);
  GlobalModel g2 = Global(std::vector<float>(1000, 0), std::vector<float>(1000, 0));
  EXPECT_TRUE(Normalized(0.0)->Merge(stepped.View(), Input({32, 32, 32}, {3, 1, 1}), &g2).perturbed);
}

TEST(NormalizedMerger, RenormalizedPerturbationKeepsTheWeightsSummingToOne) {
  // The case above with renormalize_perturbed: {0.09, 0.3, 0.2, 0.44} / 1.03.
  Replicas r = Constant({1, 2, 0.5, -1}, 1000);
  GlobalModel global = Global(std::vector<float>(1000, 0), std::vector<float>(1000, 0));
  const MergeOutcome out = Normalized(0.0, 0.1, 0.1, true)
                               ->Merge(r.View(), Input({64, 32, 48, 16}, {10, 30, 20, 40}), &global);
  ExpectWeights({0.09 / 1.03, 0.3 / 1.03, 0.2 / 1.03, 0.44 / 1.03}, out.weights);
  EXPECT_TRUE(out.perturbed);
  EXPECT_NEAR(1.0, out.weights[0] + out.weights[1] + out.weights[2] + out.weights[3], 1e-12);
  // Equal replicas stay where they are: no scale-up from the merge.
  Replicas same = Constant({0.5f, 0.5f, 0.5f, 0.5f}, 1000);
  GlobalModel g2 = Global(std::vector<float>(1000, 0), std::vector<float>(1000, 0));
  Normalized(0.0, 1.0, 0.1, true)->Merge(same.View(), Input({64, 32, 48, 16}, {10, 30, 20, 40}), &g2);
  ExpectEveryReplica(same, std::vector<float>(1000, 0.5f));
  ExpectEveryReplica(r, std::vector<float>(1000, float(0.35 / 1.03)));
}

TEST(NormalizedMerger, ThresholdAndDeltaAreOptions) {
  // The unregularized case above (0.158) is regularized for a threshold of 0.2; delta = 0.5.
  Replicas r = Constant({1, 2, 0.5, 5}, 1000);
  GlobalModel global = Global(std::vector<float>(1000, 0), std::vector<float>(1000, 0));
  const MergeOutcome out =
      Normalized(0.0, 0.2, 0.5)
          ->Merge(r.View(), Input({64, 32, 48, 16}, {10, 30, 20, 40}), &global);
  ExpectWeights({0.05, 0.3, 0.2, 0.6}, out.weights);
  EXPECT_TRUE(out.perturbed);
  // 0.05 * 1 + 0.3 * 2 + 0.2 * 0.5 + 0.6 * 5
  ExpectEveryReplica(r, std::vector<float>(1000, 3.75f));
}

TEST(NormalizedMerger, TiesPreferLargerBatchThenLowerIndexForMostUpdated) {
  // u = {4, 4, 2, 2}: r among {0, 1} -> larger b -> 1; s among {2, 3}, equal b -> higher index 3.
  // alpha = u / 12 = {1/3, 1/3, 1/6, 1/6}; perturbed: alpha_1 = 1.1 / 3, alpha_3 = 0.9 / 6.
  Replicas r = Constant({0.03f, 0.06f, 0.012f, 0.024f}, 100);
  GlobalModel global = Global(std::vector<float>(100, 0), std::vector<float>(100, 0));
  const MergeOutcome out =
      Normalized(0.0)->Merge(r.View(), Input({10, 30, 7, 7}, {4, 4, 2, 2}), &global);
  EXPECT_TRUE(out.perturbed);
  EXPECT_EQ(1, out.most_updated);
  EXPECT_EQ(3, out.least_updated);
  ExpectWeights({1.0 / 3, 1.1 / 3, 1.0 / 6, 0.15}, out.weights);
  // 0.03 / 3 + 0.06 * 1.1 / 3 + 0.012 / 6 + 0.024 * 0.15 = 0.01 + 0.022 + 0.002 + 0.0036
  ExpectEveryReplica(r, std::vector<float>(100, 0.0376f));
}

TEST(NormalizedMerger, TiesPreferSmallerBatchThenHigherIndexForLeastUpdated) {
  // u = {7, 9, 9, 3, 3}, b = {10, 20, 20, 5, 8}: r = 1 (equal b, lower index), s = 3 (smaller b).
  Replicas r = Constant({0.01f, 0.01f, 0.01f, 0.01f, 0.01f}, 10);
  GlobalModel global = Global(std::vector<float>(10, 0), std::vector<float>(10, 0));
  const MergeOutcome out =
      Normalized(0.0)->Merge(r.View(), Input({10, 20, 20, 5, 8}, {7, 9, 9, 3, 3}), &global);
  EXPECT_TRUE(out.perturbed);
  EXPECT_EQ(1, out.most_updated);
  EXPECT_EQ(3, out.least_updated);
  ExpectWeights({7.0 / 31, 9.9 / 31, 9.0 / 31, 2.7 / 31, 3.0 / 31}, out.weights);
}

TEST(NormalizedMerger, AllEqualPerturbsFirstUpAndLastDown) {
  // Equal u and b: alpha = 1/3 each, r = 0 (lowest index), s = 2 (highest index).
  Replicas r = Constant({0.03f, 0.06f, 0.09f}, 10);
  GlobalModel global = Global(std::vector<float>(10, 0), std::vector<float>(10, 0));
  const MergeOutcome out = Normalized(0.0)->Merge(r.View(), Input({8, 8, 8}, {5, 5, 5}), &global);
  EXPECT_TRUE(out.perturbed);
  EXPECT_EQ(0, out.most_updated);
  EXPECT_EQ(2, out.least_updated);
  ExpectWeights({1.1 / 3, 1.0 / 3, 0.9 / 3}, out.weights);
  // (0.033 + 0.06 + 0.081) / 3
  ExpectEveryReplica(r, std::vector<float>(10, 0.058f));
}

TEST(NormalizedMerger, OneDeviceIsNeverPerturbed) {
  // alpha = {1}; w' = r0 + 0.9 (w - w_p) = {0.01 + 0.9 * 0.25, 0.02 - 0.9 * 0.25}.
  Replicas r{{{0.01f, 0.02f}}, {}};
  GlobalModel global = Global({0.5, 0.5}, {0.25, 0.75});
  const MergeOutcome out = Normalized(0.9)->Merge(r.View(), Input({16}, {3}), &global);
  ExpectWeights({1.0}, out.weights);
  EXPECT_FALSE(out.perturbed);
  EXPECT_EQ(-1, out.most_updated);
  ExpectModel({0.235f, -0.205f}, global.current());
  ExpectModel({0.5, 0.5}, global.previous());
  ExpectEveryReplica(r, {0.235f, -0.205f});
}

TEST(NormalizedMerger, EmptyModelMergesWithoutPerturbation) {
  Replicas r{{{}, {}}, {}};
  GlobalModel global;
  const MergeOutcome out = Normalized(0.9)->Merge(r.View(), Input({1, 1}, {2, 2}), &global);
  ExpectWeights({0.5, 0.5}, out.weights);
  EXPECT_FALSE(out.perturbed);
}

// Two consecutive merges from w = {1, -1} = w_p:
//  1st: u equal, b = {1, 3}: alpha = {0.25, 0.75}, 0.25 {3, 1} + 0.75 {1, 5} = {1.5, 4};
//       momentum term gamma (w - w_p) = 0, so w = {1.5, 4}, w_p = {1, -1}.
//  2nd: u = {3, 1}: alpha = {0.75, 0.25}, 0.75 {2, 4} + 0.25 {1, 2} = {1.75, 3.5};
//       gamma = 0.9: + 0.9 ({1.5, 4} - {1, -1}) = + {0.45, 4.5} -> w = {2.2, 8}; gamma = 0:
//       {1.75, 3.5}. Either way w_p = {1.5, 4}. The norms are large: no perturbation.
void TwoMerges(double gamma, const std::vector<float>& second) {
  auto merger = Normalized(gamma);
  GlobalModel global = Global({1, -1}, {1, -1});
  Replicas r{{{3, 1}, {1, 5}}, {}};
  MergeOutcome out = merger->Merge(r.View(), Input({1, 3}, {2, 2}), &global);
  EXPECT_FALSE(out.perturbed);
  ExpectWeights({0.25, 0.75}, out.weights);
  ExpectModel({1.5, 4}, global.current());
  ExpectModel({1, -1}, global.previous());
  ExpectEveryReplica(r, {1.5, 4});

  r.data = {{2, 4}, {1, 2}};  // what local training left
  out = merger->Merge(r.View(), Input({1, 3}, {3, 1}), &global);
  EXPECT_FALSE(out.perturbed);
  ExpectWeights({0.75, 0.25}, out.weights);
  ExpectModel(second, global.current());
  ExpectModel({1.5, 4}, global.previous());
  ExpectEveryReplica(r, second);
}

TEST(NormalizedMerger, MomentumZeroOverTwoMerges) { TwoMerges(0.0, {1.75, 3.5}); }
TEST(NormalizedMerger, MomentumPointNineOverTwoMerges) { TwoMerges(0.9, {2.2, 8}); }

TEST(NormalizedMerger, RejectsInconsistentInputsWithoutTouchingTheModel) {
  auto merger = Normalized(0.9);
  Replicas r = Constant({1, 2}, 3);
  GlobalModel global = Global({0, 0, 0}, {0, 0, 0});
  EXPECT_THROW(merger->Merge(r.View(), Input({1}, {1, 2}), &global), std::invalid_argument);
  EXPECT_THROW(merger->Merge(r.View(), Input({1, 2}, {1, 2, 3}), &global), std::invalid_argument);
  MergeInput bad_lr = Input({1, 2}, {1, 2});
  bad_lr.lr = {0.1, 0.1, 0.1};
  EXPECT_THROW(merger->Merge(r.View(), bad_lr, &global), std::invalid_argument);
  EXPECT_THROW(merger->Merge(r.View(), Input({0, 0}, {4, 4}), &global), std::invalid_argument);
  EXPECT_THROW(merger->Merge(r.View(), Input({-1, 2}, {4, 4}), &global), std::invalid_argument);
  // Unlike the average, Algorithm 2 needs both the batch sizes and the update counts.
  EXPECT_THROW(merger->Merge(r.View(), Input({}, {4, 4}), &global), std::invalid_argument);
  EXPECT_THROW(merger->Merge(r.View(), Input({1, 2}, {}), &global), std::invalid_argument);
  EXPECT_THROW(merger->Merge(r.View(), Input({1, 2}, {1, 2}), nullptr), std::invalid_argument);
  EXPECT_THROW(merger->Merge(ReplicaSet{}, MergeInput{}, &global), std::invalid_argument);
  GlobalModel small = Global({0, 0}, {0, 0});
  EXPECT_THROW(merger->Merge(r.View(), Input({1, 2}, {1, 2}), &small), std::invalid_argument);
  GlobalModel no_previous = Global({0, 0, 0}, {});
  EXPECT_THROW(merger->Merge(r.View(), Input({1, 2}, {1, 2}), &no_previous), std::invalid_argument);
  ExpectModel({1, 1, 1}, r.data[0]);
  ExpectModel({2, 2, 2}, r.data[1]);
  ExpectModel({0, 0, 0}, global.current());
  // lr may be left empty: Algorithm 2 does not use it.
  MergeInput no_lr = Input({1, 3}, {2, 2});
  no_lr.lr.clear();
  EXPECT_NO_THROW(merger->Merge(r.View(), no_lr, &global));
}

TEST(AverageMerger, EqualWeightsAndNoPerturbation) {
  // Small norms would perturb Algorithm 2; the average never does: (1 + 3) / 2, (2 + 6) / 2.
  MergeOptions options;
  options.momentum = 0.0;
  auto merger = MakeAverageMerger(options, MakeCpuPartitionedSumCollective());
  EXPECT_EQ("average", merger->name());
  Replicas r{{{0.001f, 0.002f}, {0.003f, 0.006f}}, {}};
  GlobalModel global = Global({0, 0}, {0, 0});
  const MergeOutcome out = merger->Merge(r.View(), Input({1, 3}, {4, 9}), &global);
  ExpectWeights({0.5, 0.5}, out.weights);
  EXPECT_FALSE(out.perturbed);
  ExpectEveryReplica(r, {0.002f, 0.004f});
}

TEST(AverageMerger, GlobalMomentum) {
  // mean {0.01, 0.02, 0.03, 0.06} = 0.03; + 0.5 (0.01 - 0) = 0.035; w_p <- 0.01.
  MergeOptions options;
  options.momentum = 0.5;
  auto merger = MakeAverageMerger(options, MakeCpuPartitionedSumCollective(2));
  Replicas r = Constant({0.01f, 0.02f, 0.03f, 0.06f}, 3);
  GlobalModel global = Global({0.01f, 0.01f, 0.01f}, {0, 0, 0});
  const MergeOutcome out = merger->Merge(r.View(), MergeInput{}, &global);
  ExpectWeights({0.25, 0.25, 0.25, 0.25}, out.weights);
  EXPECT_FALSE(out.perturbed);
  ExpectModel({0.035f, 0.035f, 0.035f}, global.current());
  ExpectModel({0.01f, 0.01f, 0.01f}, global.previous());
  ExpectEveryReplica(r, {0.035f, 0.035f, 0.035f});
  GlobalModel small = Global({0}, {0});
  EXPECT_THROW(merger->Merge(r.View(), MergeInput{}, &small), std::invalid_argument);
  EXPECT_THROW(merger->Merge(r.View(), Input({1}, {1}), &global), std::invalid_argument);
}

// --algo single's merge: the one replica becomes w, the old w becomes w_p, and the replica is left
// as it is; any other number of replicas is refused before anything is written.
TEST(CopyMerger, TakesTheOneReplicaAsTheGlobalModel) {
  Replicas one{{{1.5f, -2, 0.25f}}, {}};
  GlobalModel global = Global({7, 8, 9}, {1, 1, 1});
  const MergeOutcome out = MakeCopyMerger()->Merge(one.View(), MergeInput{}, &global);
  EXPECT_EQ(out.weights, (std::vector<double>{1.0}));
  EXPECT_FALSE(out.perturbed);
  ExpectModel({1.5f, -2, 0.25f}, global.current());
  ExpectModel({7, 8, 9}, global.previous());
  ExpectModel({1.5f, -2, 0.25f}, one.data[0]);

  Replicas two{{{1, 2, 3}, {4, 5, 6}}, {}};
  GlobalModel untouched = Global({7, 8, 9}, {1, 1, 1});
  EXPECT_THROW(MakeCopyMerger()->Merge(two.View(), MergeInput{}, &untouched), std::invalid_argument);
  ExpectModel({7, 8, 9}, untouched.current());
  ExpectModel({1, 1, 1}, untouched.previous());
}

// A run of one replica on a CPU keeps no w_p (scheduler::KeepsPreviousModel): the copy takes the
// replica as w and leaves w_p empty; a w_p of another size is refused.
TEST(CopyMerger, KeepsNoPreviousModelWhereTheRunKeepsNone) {
  Replicas one{{{1.5f, -2, 0.25f}}, {}};
  GlobalModel global = Global({7, 8, 9}, {});
  MakeCopyMerger()->Merge(one.View(), MergeInput{}, &global);
  ExpectModel({1.5f, -2, 0.25f}, global.current());
  EXPECT_EQ(global.previous_size(), 0u);
  GlobalModel wrong = Global({7, 8, 9}, {1, 1});
  EXPECT_THROW(MakeCopyMerger()->Merge(one.View(), MergeInput{}, &wrong), std::invalid_argument);
}

}  // namespace
}  // namespace xmlt::merge
