// Tests of training on one device (--algo single, the engine with one replica): determinism, epoch and sample accounting (shorter
// tail batches, fractional epochs, unlabeled rows skipped), evaluation schedules, learning on a
// separable problem, divergence and option validation.
#include "run/one_device_run.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "engine/evaluator.h"
#include "tests/test_support.h"
#include "tests/make_dataset.h"

namespace xmlt::run {
namespace {

using kernels::Model;
using kernels::ModelShape;

constexpr uint32_t kClasses = 5, kBlock = 10;
constexpr uint64_t kFeatures = kClasses * kBlock + 10;  // the last 10 only in unlabeled rows

// A separable problem: a row of class c has 4 features from block c plus 2 noise features, and
// the single label c. Rows listed in `unlabeled` have no label and only features 50..59, which
// no labeled row uses.
data::Dataset MakeData(uint64_t rows, uint64_t seed, const std::vector<uint64_t>& unlabeled = {}) {
  std::mt19937_64 rng(seed);
  std::vector<xmlt::testing::DatasetRow> rows_out(rows);
  for (uint64_t r = 0; r < rows; ++r) {
    std::vector<uint32_t> ids;
    const bool has_label = std::find(unlabeled.begin(), unlabeled.end(), r) == unlabeled.end();
    const uint32_t c = uint32_t(rng() % kClasses);
    if (has_label) {
      for (int i = 0; i < 4; ++i) ids.push_back(c * kBlock + uint32_t(rng() % kBlock));
      for (int i = 0; i < 2; ++i) ids.push_back(uint32_t(rng() % (kClasses * kBlock)));
    } else {
      for (int i = 0; i < 3; ++i) ids.push_back(uint32_t(kClasses * kBlock + rng() % 10));
    }
    std::sort(ids.begin(), ids.end());
    ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
    for (uint32_t id : ids) rows_out[r].features.emplace_back(id, 0.5f);
    if (has_label) rows_out[r].labels.push_back(c);
  }
  return xmlt::testing::MakeDataset(rows_out, kFeatures, kClasses, "synthetic.txt");
}

// 103 rows of which 100 are labeled (rows 10, 50 and 102 are not).
const data::Dataset& TrainSet() {
  static const data::Dataset d = MakeData(103, 1, {10, 50, 102});
  return d;
}
const data::Dataset& TestSet() {
  static const data::Dataset d = MakeData(200, 2);
  return d;
}
constexpr uint64_t kLabeledRows = 100;

Model<float> NewModel(uint64_t seed = 7) {
  ModelShape shape;
  shape.num_features = kFeatures;
  shape.hidden = {16};
  shape.num_labels = kClasses;
  shape.normalize_rows = false;
  return kernels::InitModel<float>(shape, seed);
}

scheduler::TrainOptions Options() {
  scheduler::TrainOptions o;
  o.epochs = 3;
  o.batch = 16;  // 100 % 16 = 4: every epoch ends with a 4-row batch
  o.lr = 0.3f;
  o.local_momentum = 0.9f;
  o.hidden = {16};
  o.mega_batch = 2;
  o.seed = 1;
  return o;
}

struct TrainRun {
  TrainResult result;
  Model<float> model;
  std::vector<EvalRecord> records;
  std::vector<uint64_t> progress_done;
  std::vector<double> progress_loss;
};

TrainRun DoTrain(const scheduler::TrainOptions& options, const data::Dataset* test = &TestSet(),
                 const data::Dataset& train = TrainSet()) {
  TrainRun run;
  run.model = NewModel();
  TrainCallbacks callbacks;
  callbacks.on_eval = [&](const EvalRecord& r) { run.records.push_back(r); };
  callbacks.on_progress = [&](uint64_t done, uint64_t total, double loss) {
    run.progress_done.push_back(done);
    run.progress_loss.push_back(loss);
  };
  run.result = TrainOnOneDevice(train, test, options, &run.model, callbacks);
  return run;
}

TEST(OneDeviceRunTest, SameSeedGivesIdenticalParametersAndMetrics) {
  const TrainRun a = DoTrain(Options());
  const TrainRun b = DoTrain(Options());
  EXPECT_EQ(a.model.params, b.model.params);
  ASSERT_EQ(a.records.size(), b.records.size());
  for (size_t i = 0; i < a.records.size(); ++i) {
    EXPECT_EQ(a.records[i].train_loss, b.records[i].train_loss);
    EXPECT_EQ(a.records[i].test.loss, b.records[i].test.loss);
    EXPECT_EQ(a.records[i].test.metrics.p1, b.records[i].test.metrics.p1);
    EXPECT_EQ(a.records[i].test.metrics.ndcg5, b.records[i].test.metrics.ndcg5);
  }
}

TEST(OneDeviceRunTest, DifferentSeedShufflesDifferently) {
  scheduler::TrainOptions other = Options();
  other.seed = 2;
  const TrainRun a = DoTrain(Options());
  const TrainRun b = DoTrain(other);  // same initial model: only the batch order differs
  EXPECT_NE(a.model.params, b.model.params);
  EXPECT_NE(a.records.back().train_loss, b.records.back().train_loss);
}

TEST(OneDeviceRunTest, ModelIsTrainedInPlace) {
  const Model<float> before = NewModel();
  const TrainRun run = DoTrain(Options());
  ASSERT_EQ(run.model.params.size(), before.params.size());
  EXPECT_NE(run.model.params, before.params);
  EXPECT_TRUE(run.model.shape == before.shape);
}

// Issue 64, point 1: the model a run starts from was held for the whole run as the evaluations'
// copy, one copy of the parameters more than training needs. It is released once copied into the
// global model and the replica; evaluations borrow the global model, and Train gives it back.
TEST(OneDeviceRunTest, TheStartingModelIsNotHeldWhileTraining) {
  Model<float> model = NewModel();
  const size_t parameters = model.params.size();
  std::vector<size_t> held;
  std::vector<double> p1;
  TrainCallbacks callbacks;
  callbacks.on_eval = [&](const EvalRecord& r) {
    held.push_back(model.params.size());
    p1.push_back(r.test.metrics.p1);
  };
  TrainOnOneDevice(TrainSet(), &TestSet(), Options(), &model, callbacks);
  ASSERT_FALSE(held.empty());
  for (const size_t h : held) EXPECT_EQ(h, 0u) << "the starting model's copy was held while training";
  EXPECT_GT(*std::max_element(p1.begin(), p1.end()), 0.5) << "the evaluations scored the model they borrowed";
  EXPECT_EQ(model.params.size(), parameters);
  // And the model given back is the one a run keeping its copy trained: the same as DoTrain's.
  EXPECT_EQ(model.params, DoTrain(Options()).model.params);
}

TEST(OneDeviceRunTest, EpochsCountLabeledRowsWithShorterTailBatches) {
  const TrainRun run = DoTrain(Options());
  EXPECT_EQ(run.result.last.train_samples, 3 * kLabeledRows);
  EXPECT_DOUBLE_EQ(run.result.last.epoch, 3.0);
  // ceil(100 / 16) = 7 batches per epoch: six of 16 rows and one of 4, none dropped.
  EXPECT_EQ(run.result.batches, 21u);
  ASSERT_EQ(run.progress_done.size(), 21u);
  for (size_t i = 0; i < 21; ++i) {
    const uint64_t epoch = i / 7, in_epoch = i % 7;
    const uint64_t expected =
        epoch * kLabeledRows + std::min<uint64_t>((in_epoch + 1) * 16, kLabeledRows);
    EXPECT_EQ(run.progress_done[i], expected) << "batch " << i;
  }
}

// Issue: reliability, second round, row 9: every mega-batch has its own number. Mega-batches end
// at epoch ends, and run on to the end rather than leave less than half of one there: each epoch
// of 7 batches is one mega-batch of 3 and one of 4, and with --mega-batch 5 a single one of 7.
TEST(OneDeviceRunTest, EveryMegaBatchHasItsOwnNumberAndEndsAtTheEpochsEnd) {
  scheduler::TrainOptions options = Options();
  options.mega_batch = 3;
  options.eval = scheduler::EvalSchedule{scheduler::EvalSchedule::Kind::kEveryMegaBatches, 1};
  TrainRun run = DoTrain(options);
  ASSERT_EQ(run.result.batches, 21u);
  std::vector<uint64_t> numbers, updates;
  for (const EvalRecord& r : run.records) numbers.push_back(r.megabatch), updates.push_back(r.devices[0].updates);
  EXPECT_EQ(numbers, (std::vector<uint64_t>{1, 2, 3, 4, 5, 6}));
  EXPECT_EQ(updates, (std::vector<uint64_t>{3, 4, 3, 4, 3, 4}));

  options.mega_batch = 5;
  run = DoTrain(options);
  updates.clear();
  for (const EvalRecord& r : run.records) updates.push_back(r.devices[0].updates);
  EXPECT_EQ(updates, (std::vector<uint64_t>{7, 7, 7}));
}

// Issue: reliability, second round, row 3. An end-of-run checkpoint that cannot be written (a
// full disk; here a folder under a regular file) does not lose the trained model: Train returns it
// and says why the checkpoint failed.
TEST(OneDeviceRunTest, AFailedEndCheckpointStillReturnsTheTrainedModel) {
  xmlt::testing::TempDir dir;
  xmlt::testing::WriteFile(dir.File("a-file"), "x");
  RunControl control;
  control.checkpoint_dir = dir.File("a-file/checkpoints");
  Model<float> model = NewModel();
  const Model<float> before = model;
  const TrainResult result = TrainOnOneDevice(TrainSet(), &TestSet(), Options(), &model, {}, control);
  EXPECT_FALSE(result.end_checkpoint_error.empty());
  EXPECT_TRUE(result.checkpoint.empty());
  EXPECT_EQ(result.last.train_samples, 3 * kLabeledRows);
  EXPECT_NE(model.params, before.params);
}

// Issue: reliability, third round, row 14. A periodic checkpoint that cannot be written (a full
// disk) is reported and the run goes on, as after a failed end checkpoint; it ended the run.
TEST(OneDeviceRunTest, AFailedPeriodicCheckpointIsReportedAndTrainingGoesOn) {
  xmlt::testing::TempDir dir;
  xmlt::testing::WriteFile(dir.File("a-file"), "x");
  RunControl control;
  control.checkpoint_dir = dir.File("a-file/checkpoints");
  control.checkpoint_every = 1;
  std::vector<std::string> events;
  TrainCallbacks callbacks;
  callbacks.on_event = [&](const std::string& text) { events.push_back(text); };
  Model<float> model = NewModel();
  TrainResult result;
  ASSERT_NO_THROW(result = TrainOnOneDevice(TrainSet(), &TestSet(), Options(), &model, callbacks, control));
  EXPECT_EQ(result.last.train_samples, 3 * kLabeledRows);
  EXPECT_FALSE(result.end_checkpoint_error.empty());
  size_t failed = 0;
  for (const std::string& event : events) failed += event.find("periodic checkpoint failed") != std::string::npos;
  EXPECT_GT(failed, 0u);
}

TEST(OneDeviceRunTest, FractionalEpochsStopMidEpoch) {
  scheduler::TrainOptions options = Options();
  options.epochs = 2.5;
  const TrainRun run = DoTrain(options);
  EXPECT_EQ(run.result.last.train_samples, 250u);
  EXPECT_DOUBLE_EQ(run.result.last.epoch, 2.5);
  EXPECT_EQ(run.result.batches, 7u + 7u + 4u);  // 50 rows: 16 + 16 + 16 + 2
  ASSERT_EQ(run.records.size(), 3u);            // after epochs 1 and 2, and at the end
  EXPECT_DOUBLE_EQ(run.records[0].epoch, 1.0);
  EXPECT_DOUBLE_EQ(run.records[1].epoch, 2.0);
  EXPECT_DOUBLE_EQ(run.records[2].epoch, 2.5);

  options.epochs = 0.3;
  const TrainRun short_run = DoTrain(options);
  EXPECT_EQ(short_run.result.last.train_samples, 30u);
  EXPECT_EQ(short_run.result.batches, 2u);
}

TEST(OneDeviceRunTest, RowsWithoutLabelsAreNeverTrainedOn) {
  // With one row per batch, a batch holding an unlabeled row would have a loss of exactly 0 (a
  // labeled row's cross-entropy is always positive), and it would add to the sample count.
  scheduler::TrainOptions options = Options();
  options.batch = 1;
  options.epochs = 2;
  const TrainRun run = DoTrain(options, nullptr);
  EXPECT_EQ(run.result.batches, 2 * kLabeledRows);
  EXPECT_EQ(run.result.last.train_samples, 2 * kLabeledRows);
  for (size_t i = 0; i < run.progress_loss.size(); ++i)
    ASSERT_GT(run.progress_loss[i], 0.0) << "batch " << i;
  // The features only unlabeled rows have keep their initial first-layer weights.
  const Model<float> initial = NewModel();
  for (uint64_t f = kClasses * kBlock; f < kFeatures; ++f)
    for (uint32_t u = 0; u < 16; ++u)
      EXPECT_EQ(run.model.Weight(0)[f * 16 + u], initial.Weight(0)[f * 16 + u]) << "feature " << f;
}

TEST(OneDeviceRunTest, TrainingSetWithoutLabelsIsRejectedNamingTheSource) {
  const data::Dataset none = MakeData(5, 3, {0, 1, 2, 3, 4});
  try {
    DoTrain(Options(), nullptr, none);
    ADD_FAILURE() << "no error";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("synthetic.txt"), std::string::npos) << e.what();
  }
}

TEST(OneDeviceRunTest, EachEpochScheduleEvaluatesOncePerEpoch) {
  const TrainRun run = DoTrain(Options());
  ASSERT_EQ(run.records.size(), 3u);
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_DOUBLE_EQ(run.records[i].epoch, double(i + 1));
    EXPECT_EQ(run.records[i].train_samples, (i + 1) * kLabeledRows);
    // Mega-batches of 2 batches, the last of each epoch of 3 (16 + 16 + the 4-row tail): 3 an epoch.
    EXPECT_EQ(run.records[i].megabatch, 3 * (i + 1));
    EXPECT_EQ(run.records[i].test.rows, TestSet().num_rows());
    EXPECT_GE(run.records[i].train_time_s, i > 0 ? run.records[i - 1].train_time_s : 0.0);
    EXPECT_GE(run.records[i].wall_time_s, run.records[i].train_time_s);
    ASSERT_EQ(run.records[i].devices.size(), 1u);
    EXPECT_EQ(run.records[i].devices[0].updates, 7u);  // batches since the previous evaluation
  }
  EXPECT_EQ(run.result.last.train_samples, run.records.back().train_samples);
}

TEST(OneDeviceRunTest, EndScheduleEvaluatesOnce) {
  scheduler::TrainOptions options = Options();
  options.eval.kind = scheduler::EvalSchedule::Kind::kEnd;
  const TrainRun run = DoTrain(options);
  ASSERT_EQ(run.records.size(), 1u);
  EXPECT_EQ(run.records[0].train_samples, 3 * kLabeledRows);
  EXPECT_DOUBLE_EQ(run.records[0].epoch, 3.0);
  EXPECT_EQ(run.records[0].devices[0].updates, 21u);
}

TEST(OneDeviceRunTest, EveryMegaBatchesScheduleEvaluatesOnTheMegaBatchCount) {
  scheduler::TrainOptions options = Options();
  options.eval.kind = scheduler::EvalSchedule::Kind::kEveryMegaBatches;
  options.eval.mega_batches = 2;
  const TrainRun run = DoTrain(options);
  // Each epoch is mega-batches of 2, 2 and 3 batches (9 in all): evaluated after mega-batches 2,
  // 4, 6 and 8, and at the end.
  ASSERT_EQ(run.records.size(), 5u);
  const std::vector<uint64_t> numbers{2, 4, 6, 8, 9}, updates{4, 5, 5, 4, 3};
  for (size_t i = 0; i < 5; ++i) {
    EXPECT_EQ(run.records[i].megabatch, numbers[i]);
    EXPECT_EQ(run.records[i].devices[0].updates, updates[i]);
  }
  EXPECT_EQ(run.records[4].train_samples, 3 * kLabeledRows);

  // When the last batch falls on the schedule there is no second, duplicate evaluation.
  options.batch = 20;  // 5 batches per epoch, 15 in all
  options.eval.mega_batches = 1;
  options.mega_batch = 5;
  const TrainRun aligned = DoTrain(options);
  ASSERT_EQ(aligned.records.size(), 3u);
  EXPECT_EQ(aligned.records[2].megabatch, 3u);
  EXPECT_EQ(aligned.records[2].train_samples, 3 * kLabeledRows);
}

TEST(OneDeviceRunTest, WithoutATestSetRecordsCarryTrainingData) {
  const TrainRun run = DoTrain(Options(), nullptr);
  ASSERT_EQ(run.records.size(), 3u);
  EXPECT_EQ(run.records.back().test.rows, 0u);
  EXPECT_GT(run.records.back().train_loss, 0.0);
  EXPECT_EQ(run.records.back().train_samples, 3 * kLabeledRows);
}

TEST(OneDeviceRunTest, LossDecreasesAndAccuracyRisesOnASeparableProblem) {
  const double initial_loss = engine::Evaluate(NewModel(), TestSet()).loss;
  scheduler::TrainOptions options = Options();
  options.epochs = 10;
  const TrainRun run = DoTrain(options);
  ASSERT_EQ(run.records.size(), 10u);
  EXPECT_NEAR(initial_loss, std::log(double(kClasses)), 0.5);  // near-uniform at the start
  EXPECT_LT(run.records.back().test.loss, 0.3 * initial_loss);
  EXPECT_LT(run.records.back().train_loss, 0.5 * run.records.front().train_loss);
  // Chance is about 0.2; each class has its own block of features.
  EXPECT_GT(run.result.best.test.metrics.p1, 0.9);
  EXPECT_GE(run.result.best.test.metrics.p1, run.result.last.test.metrics.p1);
}

TEST(OneDeviceRunTest, HugeLearningRateRaisesAClearDivergenceError) {
  scheduler::TrainOptions options = Options();
  options.lr = 1e30f;
  options.local_momentum = 0;
  try {
    DoTrain(options);
    ADD_FAILURE() << "training with lr 1e30 did not report divergence";
  } catch (const RunStopped& e) {
    const std::string what = e.what();
    EXPECT_EQ(e.why(), RunStopped::Why::kDiverged);
    EXPECT_NE(what.find("diverged"), std::string::npos) << what;
    EXPECT_NE(what.find("halved learning rates"), std::string::npos) << what;
  }
}

TEST(OneDeviceRunTest, InvalidOptionsAreRejected) {
  for (auto mutate : std::vector<void (*)(scheduler::TrainOptions&)>{
           [](scheduler::TrainOptions& o) { o.batch = 0; },
           [](scheduler::TrainOptions& o) { o.epochs = 0; },
           [](scheduler::TrainOptions& o) { o.epochs = -1; },
           [](scheduler::TrainOptions& o) { o.epochs = std::numeric_limits<double>::quiet_NaN(); },
           [](scheduler::TrainOptions& o) { o.mega_batch = 0; },
       }) {
    scheduler::TrainOptions options = Options();
    mutate(options);
    Model<float> model = NewModel();
    EXPECT_THROW(TrainOnOneDevice(TrainSet(), nullptr, options, &model), std::invalid_argument);
  }
}

// The next two run Train in a child process (a death test) so that a crash or a never-ending
// run fails the test instead of the whole test program. The child exits 0 only when Train
// throws std::invalid_argument.
void ExpectRejectedInChild(const scheduler::TrainOptions& options) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        ::alarm(5);  // SIGALRM ends a run that never finishes (a valid check throws at once)
        Model<float> model = NewModel();
        try {
          TrainOnOneDevice(TrainSet(), nullptr, options, &model);
        } catch (const std::invalid_argument&) {
          std::_Exit(0);
        } catch (...) {
          std::_Exit(3);
        }
        std::_Exit(4);
      },
      ::testing::ExitedWithCode(0), "");
}

// Regression: an every-0-mega-batches schedule divided by zero (SIGFPE). The CLI never builds it
// ("0" means "end"), but Train validates it like the other options.
TEST(OneDeviceRunTest, EveryZeroMegaBatchesIsRejected) {
  scheduler::TrainOptions options = Options();
  options.eval.kind = scheduler::EvalSchedule::Kind::kEveryMegaBatches;
  options.eval.mega_batches = 0;
  ExpectRejectedInChild(options);
}

// Regression: `!(epochs > 0)` let +infinity through and `std::llround(inf * rows)` is 2^63 on
// x86-64, so `train --epochs inf` trained practically forever.
TEST(OneDeviceRunTest, InfiniteEpochsAreRejected) {
  scheduler::TrainOptions options = Options();
  options.epochs = std::numeric_limits<double>::infinity();
  ExpectRejectedInChild(options);
}

}  // namespace
}  // namespace xmlt::run
