// Reliability of the training loop: a run stopped (between or inside mega-batches) and resumed
// from its checkpoint, or finished and extended, reproduces the uninterrupted run exactly (virtual
// clock, same seed), for every merge and for one device (--algo single); divergences roll back with halved learning rates; failing
// devices are dropped while training goes on.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "data/input_error.h"
#include "dist/rank_group.h"
#include "engine/device_spec.h"
#include "run/checkpoint_file.h"
#include "run/multi_device_run.h"
#include "scheduler/memory_plan.h"
#include "run/run_progress.h"
#include "run/trainer.h"
#include "tests/scheduler/scheduler_test_support.h"
#include "tests/test_support.h"

namespace xmlt::scheduler {
namespace {

const data::GeneratedData& Data() {
  static const data::GeneratedData data = testing::NormalizedData(3000, 300, 500, 40, 15, 5);
  return data;
}

TrainOptions Options() { return testing::ShortRunOptions(2); }

EngineOptions Engine(const std::string& algo) {
  EngineOptions engine = testing::VirtualClockEngine("cpu:3", "1,1.3,1.8");
  engine.momentum = 0.5;
  if (algo == "adaptive-nesterov-cvb") {
    engine.nesterov = true;
    engine.heterogeneity = engine::ParseHetero("cvb:vmach=0.5,vtask=0.2");
    return engine;
  }
  if (algo == "single") return engine;  // unused: single runs through Train (SingleDeviceEngine)
  engine = testing::WithAlgo(engine, algo);
  if (algo == "elastic") engine.elastic_alpha = 0.3;  // EASGD: replicas keep their own state between merges
  return engine;
}

struct Outcome {
  std::vector<EvalRecord> records;
  kernels::Model<float> model;
  TrainResult result;
};

// Trains (or resumes); `stop_after` > 0 raises the stop flag once that many evaluations are done,
// `stop_at_rows` > 0 once a batch brings the rows trained to that many.
Outcome TrainFor(const TrainOptions& options, const EngineOptions* engine, RunControl control, size_t stop_after = 0,
                 uint64_t stop_at_rows = 0) {
  const data::GeneratedData& data = Data();
  kernels::ModelShape shape{data.train.num_features(), options.hidden, data.train.num_labels()};
  Outcome out;
  out.model = kernels::InitModel<float>(shape, options.seed);
  std::atomic<int> stop{0};
  control.stop_signal = &stop;
  TrainCallbacks callbacks;
  callbacks.on_resume = [&](const std::vector<EvalRecord>& earlier) { out.records = earlier; };
  callbacks.on_eval = [&](const EvalRecord& r) {
    out.records.push_back(r);
    if (stop_after > 0 && out.records.size() == stop_after) stop = 15;
  };
  callbacks.on_progress = [&](uint64_t done, uint64_t, double) {
    if (stop_at_rows > 0 && done >= stop_at_rows) stop = 2;
  };
  out.result = engine != nullptr
                   ? RunMultiDevice(data.train, &data.test, options, *engine, &out.model, callbacks, control)
                   : Train(data.train, &data.test, options, &out.model, callbacks, control);
  return out;
}

// Records equal in everything but the wall-clock fields (one device trains on the wall clock, so
// its step, busy and idle times are measured too).
void ExpectSameRecords(const std::vector<EvalRecord>& a, const std::vector<EvalRecord>& b, bool wall_clock_steps) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t k = 0; k < a.size(); ++k) {
    EvalRecord x = a[k], y = b[k];
    x.wall_time_s = y.wall_time_s = 0;
    x.eval_time_s = y.eval_time_s = 0;
    if (wall_clock_steps) {
      x.train_time_s = y.train_time_s = 0;
      for (DeviceRecord& d : x.devices) d.busy_s = d.idle_s = 0;
      for (DeviceRecord& d : y.devices) d.busy_s = d.idle_s = 0;
    }
    EXPECT_EQ(ToJson(x), ToJson(y)) << "evaluation " << k;
  }
}

// The same run: the same records (ExpectSameRecords) and the same model, bit for bit.
void ExpectSameRun(const Outcome& a, const Outcome& b, bool wall_clock_steps) {
  ExpectSameRecords(a.records, b.records, wall_clock_steps);
  ASSERT_EQ(a.model.params.size(), b.model.params.size());
  EXPECT_TRUE(testing::SameBits(a.model.params.data(), b.model.params.data(), a.model.params.size()));
}

// Every --algo, and Nesterov momentum under the gamma model, for the parameterized tests.
const auto kEveryAlgo = ::testing::Values("adaptive", "adaptive-nesterov-cvb", "elastic", "adasum", "sync",
                                          "crossbow", "single");

// A run in which `device` fails in mega-batch `megabatch`.
RunControl FailingDevice(size_t device, uint64_t megabatch) {
  RunControl control;
  FaultInjection fail;
  fail.device = device;
  fail.megabatch = megabatch;
  control.faults = {fail};
  return control;
}

// Rows the devices trained, over every evaluation's per-device records.
uint64_t RowsTrained(const std::vector<EvalRecord>& records) {
  uint64_t rows = 0;
  for (const EvalRecord& r : records)
    for (const DeviceRecord& d : r.devices) rows += d.rows;
  return rows;
}

class ResumeTest : public ::testing::TestWithParam<std::string> {};

TEST_P(ResumeTest, AStoppedAndResumedRunEqualsTheUninterruptedOne) {
  const TrainOptions options = Options();
  const EngineOptions engine = Engine(GetParam());
  const bool single = GetParam() == "single";
  const Outcome full = TrainFor(options, single ? nullptr : &engine, {});
  ASSERT_GE(full.records.size(), 4u);

  testing::TempDir dir;
  RunControl control;
  control.checkpoint_dir = dir.path();
  control.checkpoint_every = 3;
  const Outcome first = TrainFor(options, single ? nullptr : &engine, control, 2);
  EXPECT_EQ(first.result.stopped_by_signal, 15);
  ASSERT_EQ(first.records.size(), 2u);
  ASSERT_FALSE(first.result.checkpoint.empty());

  control.resume_dir = dir.path();
  const Outcome resumed = TrainFor(options, single ? nullptr : &engine, control);
  EXPECT_EQ(resumed.result.stopped_by_signal, 0);
  ExpectSameRun(full, resumed, single);
}

// A stop is seen before the next batch is dealt, not at the mega-batch's end: the checkpoint keeps
// the mega-batch open (replicas before their merge, the plan where it stood), and the resumed run
// equals the uninterrupted one all the same.
TEST_P(ResumeTest, AStopInsideAMegaBatchEndsItThereAndResumesExactly) {
  const TrainOptions options = Options();
  const EngineOptions engine = Engine(GetParam());
  const bool single = GetParam() == "single";
  const Outcome full = TrainFor(options, single ? nullptr : &engine, {});

  testing::TempDir dir;
  RunControl control;
  control.checkpoint_dir = dir.path();
  const uint64_t rows_per_megabatch = uint64_t(options.mega_batch) * options.batch;
  const Outcome first = TrainFor(options, single ? nullptr : &engine, control, 0, 3 * rows_per_megabatch + 40);
  EXPECT_EQ(first.result.stopped_by_signal, 2);
  // Stopped in the fourth mega-batch, within a few batches of the stop.
  const nlohmann::json progress =
      nlohmann::json::parse(CheckpointReader::Open(dir.path()).meta()).at("progress");
  EXPECT_EQ(progress.at("megabatches").get<uint64_t>(), 3u);

  control.resume_dir = dir.path();
  const Outcome resumed = TrainFor(options, single ? nullptr : &engine, control);
  EXPECT_EQ(resumed.result.stopped_by_signal, 0);
  ExpectSameRun(full, resumed, single);
}

INSTANTIATE_TEST_SUITE_P(EveryMerge, ResumeTest,
                         kEveryAlgo, testing::AlgoTestName);

// Reliability, second round, row 6: a finished run extended with more --epochs is the run that
// trained that long from the start, bit for bit and record for record: mega-batches end at epoch
// ends, and the end checkpoint is written before the end's own evaluation.
class ExtendTest : public ::testing::TestWithParam<std::string> {};

TEST_P(ExtendTest, AFinishedRunExtendedWithMoreEpochsEqualsTheLongerRun) {
  const EngineOptions engine = Engine(GetParam());
  const bool single = GetParam() == "single";
  const EngineOptions* devices = single ? nullptr : &engine;
  // Whole epochs: exactly the longer run. A fractional end (0.9 epochs, mega-batches of 1,280
  // rows: the end falls inside the third) cuts a mega-batch, kept open, and a batch, which a
  // longer run trains whole: the same rows, a close model.
  for (const double first_epochs : {1.0, 0.9}) {
    SCOPED_TRACE(::testing::Message() << "first run of " << first_epochs << " epochs");
    const bool whole = first_epochs == 1.0;
    TrainOptions options = Options();
    options.epochs = 2;
    if (!whole) options.mega_batch = 40;
    const Outcome longer = TrainFor(options, devices, {});

    testing::TempDir dir;
    RunControl control;
    control.checkpoint_dir = dir.path();
    TrainOptions shorter = options;
    shorter.epochs = first_epochs;
    const Outcome first = TrainFor(shorter, devices, control);
    EXPECT_NEAR(first.records.back().epoch, first_epochs, 1e-12);
    for (float w : first.model.params) ASSERT_TRUE(std::isfinite(w));
    const nlohmann::json meta = nlohmann::json::parse(CheckpointReader::Open(dir.path()).meta());
    EXPECT_EQ(meta.contains("open_mega_batch"), !whole);

    const testing::TempDir copy;
    std::filesystem::copy(dir.path(), copy.path(), std::filesystem::copy_options::recursive);

    control.resume_dir = dir.path();
    const Outcome extended = TrainFor(options, devices, control);
    if (whole) {
      ExpectSameRun(longer, extended, single);
    } else {
      EXPECT_EQ(extended.records.back().train_samples, longer.records.back().train_samples);
      EXPECT_NEAR(extended.records.back().test.metrics.p1, longer.records.back().test.metrics.p1, 0.05);
    }

    // A finished run resumed with the same --epochs ends the same way again.
    control.checkpoint_dir = control.resume_dir = copy.path();
    const Outcome again = TrainFor(shorter, devices, control);
    ExpectSameRun(first, again, single);
  }
}

INSTANTIATE_TEST_SUITE_P(EveryMerge, ExtendTest,
                         kEveryAlgo, testing::AlgoTestName);

// An elastic restart: a checkpoint of 3 devices resumed on 2 (fewer ranks, or a lost GPU) or on
// 4. The run goes on from the global model and the data's position: every row of every epoch is
// trained once, the earlier evaluations are kept, the new devices report under their own ids, the
// test loss falls below the checkpoint's, the best P@1 lands near the uninterrupted run's, and the
// re-planned run is itself reproducible.
class ElasticRestartTest : public ::testing::TestWithParam<std::string> {};

EngineOptions OnDevices(EngineOptions engine, const std::string& devices, const std::string& speed) {
  engine.devices = engine::ParseDeviceList(devices);
  if (!engine.heterogeneity.speed.empty()) engine.heterogeneity.speed = engine::ParseSpeeds(speed);
  return engine;
}

TEST_P(ElasticRestartTest, ACheckpointOfOtherDevicesResumesReplanned) {
  const TrainOptions options = Options();
  const EngineOptions engine = Engine(GetParam());
  const Outcome full = TrainFor(options, &engine, {});
  for (const auto& [devices, speed] : {std::pair{"cpu:2", "1,1.3"}, std::pair{"cpu:4", "1,1.3,1.8,1.1"}}) {
    SCOPED_TRACE(devices);
    testing::TempDir dir;
    RunControl control;
    control.checkpoint_dir = dir.path();
    const Outcome first = TrainFor(options, &engine, control, 2);
    ASSERT_EQ(first.records.size(), 2u);
    EXPECT_FALSE(nlohmann::json::parse(CheckpointReader::Open(dir.path()).meta()).contains("open_mega_batch"));
    const testing::TempDir copy;
    std::filesystem::copy(dir.path(), copy.path(), std::filesystem::copy_options::recursive);

    const EngineOptions other = OnDevices(engine, devices, speed);
    control.resume_dir = dir.path();
    const Outcome replanned = TrainFor(options, &other, control);
    EXPECT_EQ(replanned.result.stopped_by_signal, 0);
    ASSERT_GT(replanned.records.size(), first.records.size());
    ExpectSameRecords(first.records, {replanned.records.begin(), replanned.records.begin() + 2}, false);
    EXPECT_EQ(replanned.records.back().train_samples, full.records.back().train_samples);
    EXPECT_EQ(RowsTrained(replanned.records), RowsTrained(full.records));
    EXPECT_EQ(replanned.records.back().devices.size(), other.devices.size());
    // Training goes on (P@1 on 300 test rows swings by several points between evaluations, so
    // the best of each run is compared).
    auto best = [](const std::vector<EvalRecord>& records, size_t from) {
      double p1 = 0;
      for (size_t k = from; k < records.size(); ++k) p1 = std::max(p1, records[k].test.metrics.p1);
      return p1;
    };
    double lowest_loss = first.records.back().test.loss;
    for (size_t k = 2; k < replanned.records.size(); ++k) lowest_loss = std::min(lowest_loss, replanned.records[k].test.loss);
    EXPECT_LT(lowest_loss, first.records.back().test.loss);
    EXPECT_NEAR(best(replanned.records, 0), best(full.records, 0), 0.06);
    for (float w : replanned.model.params) ASSERT_TRUE(std::isfinite(w));

    control.checkpoint_dir = control.resume_dir = copy.path();
    const Outcome again = TrainFor(options, &other, control);
    ExpectSameRun(replanned, again, false);
  }
}

INSTANTIATE_TEST_SUITE_P(EveryMerge, ElasticRestartTest,
                         ::testing::Values("adaptive", "adaptive-nesterov-cvb", "elastic", "adasum", "sync",
                                           "crossbow"),
                         testing::AlgoTestName);

// What the old devices alone hold is refused on others: a mega-batch cut by a stop lives in their
// replicas. Settings that do not follow the devices must still match.
TEST(ElasticRestart, RefusesAMegaBatchCutInsideAndOtherSettings) {
  const EngineOptions engine = Engine("adaptive");
  const EngineOptions fewer = OnDevices(engine, "cpu:2", "1,1.3");
  {
    testing::TempDir dir;
    RunControl control;
    control.checkpoint_dir = dir.path();
    // 0.9 epochs in mega-batches of 1,280 rows: the end falls inside the third, kept open.
    TrainOptions options = Options();
    options.mega_batch = 40;
    TrainOptions shorter = options;
    shorter.epochs = 0.9;
    TrainFor(shorter, &engine, control);
    ASSERT_TRUE(nlohmann::json::parse(CheckpointReader::Open(dir.path()).meta()).contains("open_mega_batch"));
    control.resume_dir = dir.path();
    try {
      TrainFor(options, &fewer, control);
      FAIL() << "expected a refusal";
    } catch (const data::InputError& e) {
      EXPECT_NE(std::string(e.what()).find("cut inside a mega-batch"), std::string::npos) << e.what();
    }
  }
  testing::TempDir dir;
  RunControl control;
  control.checkpoint_dir = dir.path();
  TrainFor(Options(), &engine, control, 1);
  TrainOptions other = Options();
  other.batch = 64;
  other.lr = 2 * Options().lr;
  control.resume_dir = dir.path();
  try {
    TrainFor(other, &fewer, control);
    FAIL() << "expected a refusal";
  } catch (const RunMismatch& e) {
    ASSERT_EQ(e.differences().size(), 1u) << e.what();
    EXPECT_EQ(e.differences()[0].name, "batch");
  }
}

TEST(Resume, ADifferentSettingIsRefusedNamingTheSetting) {
  testing::TempDir dir;
  RunControl control;
  control.checkpoint_dir = dir.path();
  const EngineOptions engine = Engine("adaptive");
  TrainFor(Options(), &engine, control, 1);
  TrainOptions other = Options();
  other.batch = 64;
  control.resume_dir = dir.path();
  try {
    TrainFor(other, &engine, control);
    FAIL() << "expected a refusal";
  } catch (const RunMismatch& e) {
    // By the setting's name: the command line says which flag it is (apps/setting_flags.cc).
    ASSERT_EQ(e.differences().size(), 1u) << e.what();
    EXPECT_EQ(e.differences()[0].name, "batch");
    EXPECT_EQ(e.differences()[0].checkpoint, "32");
    EXPECT_EQ(e.differences()[0].now, "64");
  }
  // A single-device run is another run (one device, another merge) than this three-device one.
  EXPECT_THROW(TrainFor(Options(), nullptr, control), RunMismatch);
}

// A device's batch size comes from the checkpoint; above --batch its batches would not fit the
// replica's buffers, so a checkpoint that says so is refused on resume.
TEST(Resume, ADeviceBatchAboveTheBatchFlagIsRefused) {
  testing::TempDir dir;
  RunControl control;
  control.checkpoint_dir = dir.path();
  const EngineOptions engine = Engine("adaptive");
  TrainFor(Options(), &engine, control, 1);
  {
    const CheckpointReader reader = CheckpointReader::Open(dir.path());
    nlohmann::json meta = nlohmann::json::parse(reader.meta());
    meta["pool"]["devices"][1]["batch"] = 2.0 * Options().batch;
    std::vector<std::pair<std::string, std::vector<float>>> floats;
    std::vector<std::pair<std::string, std::vector<uint64_t>>> rows;
    for (const char* name : {"global.current", "global.previous"}) floats.emplace_back(name, reader.Read<float>(name));
    for (const char* name : {"sampler.order", "requeued"}) rows.emplace_back(name, reader.Read<uint64_t>(name));
    for (int i = 0; i < 3; ++i)
      for (const char* part : {".params", ".momentum"}) {
        const std::string name = "device." + std::to_string(i) + part;
        if (reader.Has(name)) floats.emplace_back(name, reader.Read<float>(name));
      }
    CheckpointWriter writer(meta.dump());
    for (const auto& [name, values] : floats) writer.Add(name, values);
    for (const auto& [name, values] : rows) writer.Add(name, values);
    writer.Write(dir.path());
  }
  control.resume_dir = dir.path();
  try {
    TrainFor(Options(), &engine, control);
    FAIL() << "expected a refusal";
  } catch (const data::InputError& e) {
    EXPECT_NE(std::string(e.what()).find("bad batch size"), std::string::npos) << e.what();
  }
}

TEST(Resume, MoreEpochsContinueAFinishedRun) {
  testing::TempDir dir;
  RunControl control;
  control.checkpoint_dir = dir.path();
  const EngineOptions engine = Engine("adaptive");
  TrainOptions options = Options();
  options.epochs = 1;
  const Outcome first = TrainFor(options, &engine, control);
  control.resume_dir = dir.path();
  options.epochs = 2;
  const Outcome more = TrainFor(options, &engine, control);
  EXPECT_NEAR(more.records.back().epoch, 2.0, 1e-9);
  EXPECT_GT(more.records.size(), first.records.size());
}

TEST(Rollback, ANaNLossRollsBackAndHalvesTheLearningRates) {
  const TrainOptions options = Options();
  const EngineOptions engine = Engine("adaptive");
  RunControl control;
  FaultInjection nan;
  nan.kind = FaultInjection::Kind::kNaN;
  nan.device = 1;
  nan.megabatch = 3;
  control.faults = {nan};
  std::vector<std::string> events;
  const Outcome out = TrainFor(options, &engine, control);
  EXPECT_EQ(out.result.rollbacks, 1u);
  EXPECT_EQ(out.records.back().rollbacks, 1u);
  EXPECT_EQ(out.records.front().rollbacks, 0u);
  // Mega-batch 3 was trained again at half the rate: the same number of rows in all.
  EXPECT_EQ(out.records.back().train_samples, uint64_t(std::llround(2 * 3000.0)));
  EXPECT_DOUBLE_EQ(out.records.back().devices[0].lr, 0.5 * out.records.front().devices[0].lr);
  for (float w : out.model.params) ASSERT_TRUE(std::isfinite(w));
}

TEST(Rollback, TooManyDivergencesStopWithACheckpointOfTheLastGoodState) {
  testing::TempDir dir;
  RunControl control;
  control.checkpoint_dir = dir.path();
  control.max_rollbacks = 2;
  FaultInjection nan;
  nan.kind = FaultInjection::Kind::kNaN;
  nan.megabatch = 2;
  control.faults = {nan, nan, nan};  // mega-batch 2 diverges three times over
  const EngineOptions engine = Engine("adaptive");
  try {
    TrainFor(Options(), &engine, control);
    FAIL() << "expected the run to stop";
  } catch (const RunStopped& e) {
    EXPECT_EQ(e.why(), RunStopped::Why::kDiverged);
    EXPECT_EQ(e.checkpoint_dir(), dir.path());
    EXPECT_NE(std::string(e.what()).find("after 2 rollbacks"), std::string::npos) << e.what();
  }
  // The checkpoint holds the last trusted state (the start: a state is trusted once the
  // mega-batch after it was sound), and resuming finishes the run.
  control.faults.clear();
  control.resume_dir = dir.path();
  const Outcome resumed = TrainFor(Options(), &engine, control);
  EXPECT_EQ(resumed.result.rollbacks, 3u);
  EXPECT_NEAR(resumed.records.back().epoch, 2.0, 1e-9);
}

TEST(Rollback, OneDeviceStopsWhenHalvingDoesNotHelp) {
  TrainOptions options = Options();
  options.lr = 1e30f;
  RunControl control;
  control.max_rollbacks = 2;
  try {
    TrainFor(options, nullptr, control);
    FAIL() << "expected the run to stop";
  } catch (const RunStopped& e) {
    EXPECT_NE(std::string(e.what()).find("after 2 rollbacks"), std::string::npos) << e.what();
  }
}

TEST(DeviceFaults, AFailedDeviceIsDroppedAndTheOthersTrainEveryRow) {
  for (const std::string algo : {"adaptive", "elastic", "sync"}) {
    SCOPED_TRACE(algo);
    const EngineOptions engine = Engine(algo);
    const Outcome out = TrainFor(Options(), &engine, FailingDevice(1, 2));
    const EvalRecord& last = out.records.back();
    EXPECT_TRUE(last.devices[1].dropped);
    EXPECT_NE(last.devices[1].fault.find("injected fault"), std::string::npos) << last.devices[1].fault;
    EXPECT_EQ(last.devices[1].rows, 0u);
    EXPECT_EQ(last.devices[1].weight, 0.0);
    EXPECT_FALSE(last.devices[0].dropped);
    // The average is renormalized over the survivors (Algorithm 2's perturbation does not
    // renormalize; EASGD's weights are its pull strength).
    if (algo == "sync") {
      EXPECT_NEAR(last.devices[0].weight + last.devices[2].weight, 1.0, 1e-12);
    }
    EXPECT_EQ(RowsTrained(out.records), last.train_samples);
    EXPECT_EQ(last.train_samples, 6000u);
  }
}

// Issue: reliability, third round, row 11. A device failing in an epoch's last mega-batch sends
// its rows back to the queue; the next mega-batch must train them alone and end there, at the
// epoch's end. It ran on into the next epoch instead: that epoch's evaluation moved (to 1.42, not
// 1), and the run's mega-batches no longer ended with its epochs, so the end checkpoint of a run of
// whole epochs held a cut mega-batch, refused on other devices.
TEST(DeviceFaults, AFaultInAnEpochsLastMegaBatchKeepsTheEvaluationsAndTheEndOnEpochEnds) {
  testing::TempDir dir;
  TrainOptions options = Options();
  options.epochs = 3;
  options.eval.kind = EvalSchedule::Kind::kEachEpoch;
  const EngineOptions engine = Engine("adaptive");
  // The first epoch's last mega-batch (Algorithm 1 sizes the batches), from the run without fault.
  const uint64_t last_of_first_epoch = TrainFor(options, &engine, RunControl{}).records.at(0).megabatch;
  RunControl control = FailingDevice(0, last_of_first_epoch);
  control.checkpoint_dir = dir.path();
  const Outcome out = TrainFor(options, &engine, control);
  ASSERT_EQ(out.records.size(), 3u);
  ASSERT_TRUE(out.records[0].devices[0].dropped) << "the fault did not fire in the first epoch";
  for (size_t k = 0; k < 3; ++k) EXPECT_EQ(out.records[k].epoch, double(k + 1)) << "evaluation " << k;
  EXPECT_EQ(RowsTrained(out.records), 9000u);
  EXPECT_FALSE(nlohmann::json::parse(CheckpointReader::Open(dir.path()).meta()).contains("open_mega_batch"));
  // Whole epochs end with a whole mega-batch, which other devices may resume.
  control.faults.clear();
  control.resume_dir = dir.path();
  options.epochs = 4;
  const EngineOptions fewer = OnDevices(engine, "cpu:2", "1,1.3");
  const Outcome extended = TrainFor(options, &fewer, control);
  EXPECT_EQ(extended.records.back().epoch, 4.0);
}

// The wall clock's dynamic dispatch (the most concurrent path: each result frees its device for
// the next batch) with a device failing mid-run: every row is still trained, by the others.
TEST(DeviceFaults, TheWallClockDispatchDropsAFailedDeviceToo) {
  EngineOptions engine = Engine("adaptive");
  engine.clock = EngineOptions::Clock::kWall;
  engine.heterogeneity.speed = {1, 2, 1};
  const Outcome out = TrainFor(Options(), &engine, FailingDevice(2, 3));
  const EvalRecord& last = out.records.back();
  EXPECT_TRUE(last.devices[2].dropped);
  EXPECT_EQ(last.train_samples, 6000u);
  EXPECT_EQ(RowsTrained(out.records), 6000u);
  for (float w : out.model.params) ASSERT_TRUE(std::isfinite(w));
}

TEST(DeviceFaults, WithNoDeviceLeftTheRunStopsWithACheckpointThatResumes) {
  testing::TempDir dir;
  EngineOptions engine = Engine("adaptive");
  engine.devices = engine::ParseDeviceList("cpu:2");
  engine.heterogeneity.speed = {1, 1.5};
  RunControl control;
  control.checkpoint_dir = dir.path();
  FaultInjection a, b;
  a.device = 0, b.device = 1;
  a.megabatch = b.megabatch = 3;
  control.faults = {a, b};
  try {
    TrainFor(Options(), &engine, control);
    FAIL() << "expected the run to stop";
  } catch (const RunStopped& e) {
    EXPECT_EQ(e.why(), RunStopped::Why::kNoDevice);
    EXPECT_NE(std::string(e.what()).find("every device failed"), std::string::npos) << e.what();
    EXPECT_EQ(e.checkpoint_dir(), dir.path());  // the command line's advice: --resume DIR
  }
  control.faults.clear();
  control.resume_dir = dir.path();
  const Outcome resumed = TrainFor(Options(), &engine, control);  // both devices revived
  EXPECT_EQ(resumed.records.back().train_samples, 6000u);
  EXPECT_FALSE(resumed.records.back().devices[0].dropped);
}

// A lost context (a GPU's sticky error) takes every logical device of its GPU with it; CPU
// workers share none, so here only the injected device goes. The injection still pending at a
// stop is kept in the checkpoint as what it is, and fires after the resume.
TEST(DeviceFaults, ALostContextPendingAtAStopFiresAfterTheResumeAndTakesOnlyItsCpuWorker) {
  const EngineOptions engine = Engine("adaptive");
  testing::TempDir dir;
  RunControl control;
  control.checkpoint_dir = dir.path();
  FaultInjection lost;
  lost.kind = FaultInjection::Kind::kLost;
  lost.device = 1;
  lost.megabatch = 8;
  control.faults = {lost};
  const Outcome first = TrainFor(Options(), &engine, control, 2);  // stops after mega-batch 4
  ASSERT_EQ(first.result.stopped_by_signal, 15);
  EXPECT_FALSE(first.records.back().devices[1].dropped);

  control.faults.clear();
  control.resume_dir = dir.path();
  const Outcome resumed = TrainFor(Options(), &engine, control);
  const EvalRecord& last = resumed.records.back();
  EXPECT_TRUE(last.devices[1].dropped);
  EXPECT_NE(last.devices[1].fault.find("injected loss of the device's context"), std::string::npos)
      << last.devices[1].fault;
  EXPECT_FALSE(last.devices[0].dropped);
  EXPECT_FALSE(last.devices[2].dropped);
  EXPECT_EQ(last.train_samples, 6000u);
}

TEST(MemoryPlan, AModelTooLargeForTheMachineFailsWithTheNumbers) {
  kernels::ModelShape shape{670091, {4096}, 670091};
  TrainOptions options;
  EngineOptions engine;
  engine.devices = engine::ParseDeviceList("cpu:4");
  const engine::DeviceLimits limits{128, 128 * 100, 128 * 5};
  const MemoryPlan plan = PlanMemory(shape, options, engine, limits, 490449, true);
  ASSERT_EQ(plan.devices.size(), 4u);
  EXPECT_EQ(plan.devices[0].params, shape.NumParameters() * 4);
  EXPECT_EQ(plan.devices[0].momentum, shape.NumParameters() * 4);
  try {
    CheckMemoryFits(plan, uint64_t(16) << 30, {});
    FAIL() << "expected not enough memory";
  } catch (const std::runtime_error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("not enough memory"), std::string::npos) << what;
    EXPECT_NE(what.find("cpu:3"), std::string::npos) << what;
    EXPECT_NE(what.find("16384 MiB are available"), std::string::npos) << what;
  }
  const kernels::ModelShape small{5000, {64}, 500};
  EXPECT_NO_THROW(CheckMemoryFits(PlanMemory(small, options, engine, limits, 10000, true), uint64_t(16) << 30, {}));
  // GPU replicas are checked against the GPU's free memory.
  engine.devices = engine::ParseDeviceList("cuda:0x2");
  const MemoryPlan gpu = PlanMemory(shape, options, engine, limits, 490449, false);
  EXPECT_TRUE(gpu.devices[0].gpu);
  TrainOptions plain_sgd = options;
  plain_sgd.local_momentum = 0;
  EXPECT_EQ(PlanMemory(shape, plain_sgd, engine, limits, 490449, false).devices[0].momentum,
            shape.NumParameters() * sizeof(float))
      << "a CUDA replica allocates its velocity even for plain SGD";
  EXPECT_THROW(CheckMemoryFits(gpu, 0, {uint64_t(8) << 30}), std::runtime_error);
}

// Across ranks another rank's device is a host mirror here: hierarchical merges (adaptive, elastic,
// sync) never make it, so it counts only on rank 0 with checkpoints (which it writes); Adasum
// reads every replica at every merge and holds it.
TEST(MemoryPlan, TheOtherRanksMirrorsCountOnlyWhereSomethingReadsThem) {
  const kernels::ModelShape shape{5000, {64}, 500};
  const engine::DeviceLimits limits{128, 128 * 100, 128 * 5};
  const TrainOptions options;
  std::vector<std::unique_ptr<dist::RankGroup>> groups = dist::MakeThreadGroups(2);
  EngineOptions engine;
  engine.devices = engine::DevicesOfRanks(engine::ParseDeviceList("cpu:2"), 2, &engine.device_rank);
  engine.ranks = groups[0].get();
  uint64_t replica = 0;  // parameters and momentum, as rank 0's own device holds them
  auto mirror = [&](bool checkpoints) {
    const MemoryPlan plan = PlanMemory(shape, options, engine, limits, 10000, checkpoints);
    replica = plan.devices[0].params + plan.devices[0].momentum;
    EXPECT_EQ(plan.devices[0].params, shape.NumParameters() * sizeof(float)) << "rank 0's own device";
    EXPECT_EQ(plan.devices[2].total(), 0u) << "another rank's device trains nothing here";
    return plan.devices[2].host_mirror;
  };
  EXPECT_EQ(mirror(false), 0u) << "adaptive without checkpoints makes no mirror";
  EXPECT_EQ(mirror(true), replica) << "a checkpoint brings the replica and its momentum to rank 0";
  engine.ranks = groups[1].get();
  EXPECT_EQ(PlanMemory(shape, options, engine, limits, 10000, true).devices[0].host_mirror, 0u)
      << "rank 1 only sends its own replicas to rank 0's checkpoint";
  engine.ranks = groups[0].get();
  engine.merge = EngineOptions::Merge::kAdasum;
  engine.schedule = EngineOptions::Schedule::kStatic;
  EXPECT_EQ(mirror(false), replica) << "Adasum reads every replica";
}

}  // namespace
}  // namespace xmlt::scheduler
