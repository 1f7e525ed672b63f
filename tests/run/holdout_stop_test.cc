// The held-out rows' stop (run/holdout_stop.h): the rule alone, and the training loop that it
// ends early, on the schedule planned for every epoch, resumable as stopped or, without the
// held-out rows, on to the planned end.
#include "run/holdout_stop.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "tests/run/reliability_support.h"

namespace xmlt::run {
namespace {

using namespace reliability;

std::vector<HoldoutScore> Scores(const std::vector<double>& values) {
  std::vector<HoldoutScore> scores;
  for (size_t i = 0; i < values.size(); ++i) scores.push_back({i + 1, values[i]});
  return scores;
}

TEST(HoldoutStopRule, StopsOnlyAfterPatienceEpochsWithoutAGain) {
  const HoldoutStopRule rule;  // patience 2, min gain 0.0005
  EXPECT_FALSE(HoldoutStops({}, rule));
  EXPECT_FALSE(HoldoutStops(Scores({0.5}), rule));
  EXPECT_FALSE(HoldoutStops(Scores({0.5, 0.5}), rule)) << "two scores are one epoch without a gain";
  EXPECT_TRUE(HoldoutStops(Scores({0.5, 0.5, 0.5}), rule));
  EXPECT_TRUE(HoldoutStops(Scores({0.5, 0.4, 0.5004}), rule)) << "a gain within min_gain of the best is none";
  EXPECT_FALSE(HoldoutStops(Scores({0.5, 0.5, 0.5006}), rule)) << "the last epoch gained";
  EXPECT_FALSE(HoldoutStops(Scores({0.5, 0.5006, 0.5006}), rule)) << "the one before it gained";
  EXPECT_TRUE(HoldoutStops(Scores({0.4, 0.5, 0.5003, 0.5006}), rule))
      << "each is measured against the best before it, not only the first";
  EXPECT_FALSE(HoldoutStops(Scores({0.3, 0.4, 0.5, 0.5}), rule));
}

TEST(HoldoutStopRule, PatienceAndGainAreTheRulesOwn) {
  HoldoutStopRule rule;
  rule.patience = 1;
  EXPECT_TRUE(HoldoutStops(Scores({0.5, 0.5}), rule));
  rule.patience = 0;
  EXPECT_FALSE(HoldoutStops(Scores({0.5, 0.5, 0.5}), rule)) << "no patience: never";
  rule.patience = 2;
  rule.min_gain = 0.1;
  EXPECT_TRUE(HoldoutStops(Scores({0.5, 0.55, 0.59}), rule));
}

// Four cosine epochs; the held-out rows (the test rows here) watched from the first epoch's end
// with a gain no run can make, so they end the run after epoch 2.
scheduler::TrainOptions FourCosineEpochs() {
  scheduler::TrainOptions options = Options();
  options.epochs = 4;
  options.lr_schedule = scheduler::LrSchedule::kCosine;
  return options;
}

RunControl StoppedByHoldout() {
  RunControl control;
  control.stop_holdout = &Data().test;
  control.holdout_rule.watch_below_lr_scale = 1.01;
  control.holdout_rule.min_gain = 1.0;
  control.holdout_rule.patience = 1;
  control.holdout_rule.min_rows = 0;  // the test rows are 300
  return control;
}

// The schedule's factor at the end of epoch `epoch` of 4.
double CosineAt(double epoch) { return 0.5 * (1 + std::cos(M_PI * epoch / 4)); }

class HoldoutStopRun : public ::testing::TestWithParam<std::string> {};

TEST_P(HoldoutStopRun, EndsAtAnEpochsEndOnTheScheduleOfThePlannedEpochs) {
  const bool single = GetParam() == "single";
  const scheduler::SchedulerOptions scheduling = Scheduling(GetParam());
  const scheduler::SchedulerOptions* devices = single ? nullptr : &scheduling;
  const scheduler::TrainOptions options = FourCosineEpochs();
  const Outcome planned = TrainFor(options, devices, {});
  const Outcome stopped = TrainFor(options, devices, StoppedByHoldout());

  EXPECT_EQ(planned.result.stopped_by_holdout_epoch, 0);
  EXPECT_EQ(stopped.result.stopped_by_holdout_epoch, 2);
  EXPECT_EQ(stopped.result.planned_epochs, 4);
  ASSERT_FALSE(stopped.records.empty());
  const EvalRecord& last = stopped.records.back();
  EXPECT_DOUBLE_EQ(last.epoch, 2.0);
  // The schedule is the four epochs': the last mega-batch trained at a factor above epoch 2's
  // (about 0.5), where a two-epoch schedule would be near 0.
  EXPECT_GT(last.lr_scale, CosineAt(2));
  EXPECT_LT(last.lr_scale, CosineAt(1.5));
  EXPECT_EQ(last.train_samples, 2 * uint64_t(Data().train.num_rows()));
  // Up to the stop, the run is the planned one, record for record (the last is the end's own
  // evaluation, which the planned run, evaluating every two mega-batches, need not make there).
  ASSERT_GT(planned.records.size(), stopped.records.size());
  const size_t before = stopped.records.size() - 1;
  ExpectSameRecords(std::vector<EvalRecord>(planned.records.begin(), planned.records.begin() + before),
                    std::vector<EvalRecord>(stopped.records.begin(), stopped.records.begin() + before), single);
}

TEST_P(HoldoutStopRun, ResumesStoppedOrWithoutTheHeldOutRowsOnToThePlannedEnd) {
  const bool single = GetParam() == "single";
  const scheduler::SchedulerOptions scheduling = Scheduling(GetParam());
  const scheduler::SchedulerOptions* devices = single ? nullptr : &scheduling;
  const scheduler::TrainOptions options = FourCosineEpochs();
  const Outcome stopped = TrainFor(options, devices, StoppedByHoldout());

  // Stopped by a signal after the first evaluation, then resumed: the same stop, the same model.
  testing::TempDir dir;
  RunControl control = StoppedByHoldout();
  control.checkpoint_dir = dir.path();
  const Outcome first = TrainFor(options, devices, control, 1);
  ASSERT_EQ(first.result.stopped_by_signal, 15);
  control.resume_dir = dir.path();
  const Outcome resumed = TrainFor(options, devices, control);
  EXPECT_EQ(resumed.result.stopped_by_holdout_epoch, 2);
  ExpectSameRun(stopped, resumed, single);

  // Its end checkpoint resumed as it is: it stays stopped, no row more.
  const Outcome again = TrainFor(options, devices, control);
  EXPECT_EQ(again.result.stopped_by_holdout_epoch, 2);
  EXPECT_EQ(again.records.back().train_samples, stopped.records.back().train_samples);
  ASSERT_EQ(again.model.params.size(), stopped.model.params.size());
  EXPECT_TRUE(testing::SameBits(again.model.params.data(), stopped.model.params.data(), again.model.params.size()));

  // Without the held-out rows it trains on to the planned end: the run that never stopped.
  RunControl on = control;
  on.stop_holdout = nullptr;
  const Outcome completed = TrainFor(options, devices, on);
  const Outcome planned = TrainFor(options, devices, {});
  EXPECT_EQ(completed.result.stopped_by_holdout_epoch, 0);
  ExpectSameRun(planned, completed, single);
}

// A constant rate has no annealed tail: the default rule never watches it.
TEST(HoldoutStop, TheDefaultRuleWatchesOnlyTheAnnealedTail) {
  scheduler::TrainOptions options = FourCosineEpochs();
  options.lr_schedule = scheduler::LrSchedule::kConstant;
  RunControl control;
  control.stop_holdout = &Data().test;
  control.holdout_rule.min_rows = 0;
  const Outcome constant = TrainFor(options, nullptr, control);
  EXPECT_EQ(constant.result.stopped_by_holdout_epoch, 0);
  EXPECT_DOUBLE_EQ(constant.records.back().epoch, 4.0);
}

// Fewer held-out rows than the rule's least are never watched, whatever they score.
TEST(HoldoutStop, TooFewHeldOutRowsAreNotWatched) {
  RunControl control = StoppedByHoldout();
  control.holdout_rule.min_rows = Data().test.num_rows() + 1;
  const Outcome planned = TrainFor(FourCosineEpochs(), nullptr, control);
  EXPECT_EQ(planned.result.stopped_by_holdout_epoch, 0);
  EXPECT_DOUBLE_EQ(planned.records.back().epoch, 4.0);
  control.holdout_rule.min_rows = Data().test.num_rows();
  EXPECT_EQ(TrainFor(FourCosineEpochs(), nullptr, control).result.stopped_by_holdout_epoch, 2);
}

INSTANTIATE_TEST_SUITE_P(OneAndSeveralDevices, HoldoutStopRun, ::testing::Values("single", "adaptive"),
                         testing::AlgoTestName);

}  // namespace
}  // namespace xmlt::run
