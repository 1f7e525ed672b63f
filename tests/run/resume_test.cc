// Reliability of the training loop, resuming: a run stopped (between or inside mega-batches) and
// resumed from its checkpoint, or finished and extended, reproduces the uninterrupted run exactly
// (virtual clock, same seed), for every merge and for one device (--algo single); a checkpoint of
// other devices resumes re-planned; a resume with other settings is refused.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <optional>
#include <filesystem>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "data/input_error.h"
#include "engine/device_spec.h"
#include "ranks/rank_group.h"
#include "kernels/cpu/bf16_gemm.h"
#include "run/checkpoint_file.h"
#include "run/multi_device_run.h"
#include "run/run_progress.h"
#include "run/one_device_run.h"
#include "scheduler/memory_plan.h"
#include "tests/run/reliability_support.h"
#include "tests/scheduler/scheduler_test_support.h"
#include "tests/test_support.h"

namespace xmlt::run {
namespace {

using namespace reliability;

using Sections = std::vector<std::pair<std::string, std::vector<uint8_t>>>;

// Writes the three-device checkpoint in `dir` again after `edit` changed its meta or its sections
// (as bytes): a checkpoint no run writes, for the refusals on resume.
void RewriteCheckpoint(const std::string& dir, const std::function<void(nlohmann::json*, Sections*)>& edit) {
  const CheckpointReader reader = CheckpointReader::Open(dir);
  nlohmann::json meta = nlohmann::json::parse(reader.meta());
  std::vector<std::string> names = {"global.current", "global.previous", "sampler.order", "requeued"};
  for (int i = 0; i < 3; ++i)
    for (const char* part : {".params", ".momentum", ".extra"}) names.push_back("device." + std::to_string(i) + part);
  Sections sections;
  for (const std::string& name : names)
    if (reader.Has(name)) sections.emplace_back(name, reader.Read<uint8_t>(name));
  edit(&meta, &sections);
  CheckpointWriter writer(meta.dump());
  for (const auto& [name, bytes] : sections) writer.Add(name, bytes);
  writer.Write(dir);
}

// The refusal that a one-device resume under `resumed` meets for the checkpoint a run under `first`
// wrote after one mega-batch; a resume that is not refused fails the test.
std::optional<RunMismatch> ResumeRefusal(const scheduler::TrainOptions& first, const scheduler::TrainOptions& resumed) {
  testing::TempDir dir;
  RunControl control;
  control.checkpoint_dir = dir.path();
  TrainFor(first, nullptr, control, 1);
  control.resume_dir = dir.path();
  try {
    TrainFor(resumed, nullptr, control);
  } catch (const RunMismatch& e) {
    return e;
  }
  ADD_FAILURE() << "expected a refusal";
  return std::nullopt;
}

class ResumeTest : public ::testing::TestWithParam<std::string> {};

TEST_P(ResumeTest, AStoppedAndResumedRunEqualsTheUninterruptedOne) {
  const scheduler::TrainOptions options = Options();
  const scheduler::SchedulerOptions scheduling = Scheduling(GetParam());
  const bool single = GetParam() == "single";
  const Outcome full = TrainFor(options, single ? nullptr : &scheduling, {});
  ASSERT_GE(full.records.size(), 4u);

  testing::TempDir dir;
  RunControl control;
  control.checkpoint_dir = dir.path();
  control.checkpoint_every = 3;
  const Outcome first = TrainFor(options, single ? nullptr : &scheduling, control, 2);
  EXPECT_EQ(first.result.stopped_by_signal, 15);
  ASSERT_EQ(first.records.size(), 2u);
  ASSERT_FALSE(first.result.checkpoint.empty());
  // One replica on a CPU keeps no w_p (scheduler::KeepsPreviousModel): its checkpoint holds none.
  EXPECT_EQ(CheckpointReader::Open(dir.path()).Has("global.previous"), !single);

  control.resume_dir = dir.path();
  const Outcome resumed = TrainFor(options, single ? nullptr : &scheduling, control);
  EXPECT_EQ(resumed.result.stopped_by_signal, 0);
  ExpectSameRun(full, resumed, single);
}

// A stop is seen before the next batch is dealt, not at the mega-batch's end: the checkpoint keeps
// the mega-batch open (replicas before their merge, the plan where it stood), and the resumed run
// equals the uninterrupted one all the same.
TEST_P(ResumeTest, AStopInsideAMegaBatchEndsItThereAndResumesExactly) {
  const scheduler::TrainOptions options = Options();
  const scheduler::SchedulerOptions scheduling = Scheduling(GetParam());
  const bool single = GetParam() == "single";
  const Outcome full = TrainFor(options, single ? nullptr : &scheduling, {});

  testing::TempDir dir;
  RunControl control;
  control.checkpoint_dir = dir.path();
  const uint64_t rows_per_megabatch = uint64_t(options.mega_batch) * options.batch;
  const Outcome first = TrainFor(options, single ? nullptr : &scheduling, control, 0, 3 * rows_per_megabatch + 40);
  EXPECT_EQ(first.result.stopped_by_signal, 2);
  // Stopped in the fourth mega-batch, within a few batches of the stop.
  const nlohmann::json progress =
      nlohmann::json::parse(CheckpointReader::Open(dir.path()).meta()).at("progress");
  EXPECT_EQ(progress.at("megabatches").get<uint64_t>(), 3u);

  control.resume_dir = dir.path();
  const Outcome resumed = TrainFor(options, single ? nullptr : &scheduling, control);
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
  const scheduler::SchedulerOptions scheduling = Scheduling(GetParam());
  const bool single = GetParam() == "single";
  const scheduler::SchedulerOptions* devices = single ? nullptr : &scheduling;
  // Whole epochs: exactly the longer run. A fractional end (0.9 epochs, mega-batches of 1,280
  // rows: the end falls inside the third) cuts a mega-batch, kept open, and a batch, which a
  // longer run trains whole: the same rows, a close model.
  for (const double first_epochs : {1.0, 0.9}) {
    SCOPED_TRACE(::testing::Message() << "first run of " << first_epochs << " epochs");
    const bool whole = first_epochs == 1.0;
    scheduler::TrainOptions options = Options();
    options.epochs = 2;
    if (!whole) options.mega_batch = 40;
    const Outcome longer = TrainFor(options, devices, {});

    testing::TempDir dir;
    RunControl control;
    control.checkpoint_dir = dir.path();
    scheduler::TrainOptions shorter = options;
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

TEST_P(ElasticRestartTest, ACheckpointOfOtherDevicesResumesReplanned) {
  const scheduler::TrainOptions options = Options();
  const scheduler::SchedulerOptions scheduling = Scheduling(GetParam());
  const Outcome full = TrainFor(options, &scheduling, {});
  for (const auto& [devices, speed] : {std::pair{"cpu:2", "1,1.3"}, std::pair{"cpu:4", "1,1.3,1.8,1.1"}}) {
    SCOPED_TRACE(devices);
    testing::TempDir dir;
    RunControl control;
    control.checkpoint_dir = dir.path();
    const Outcome first = TrainFor(options, &scheduling, control, 2);
    ASSERT_EQ(first.records.size(), 2u);
    EXPECT_FALSE(nlohmann::json::parse(CheckpointReader::Open(dir.path()).meta()).contains("open_mega_batch"));
    const testing::TempDir copy;
    std::filesystem::copy(dir.path(), copy.path(), std::filesystem::copy_options::recursive);

    const scheduler::SchedulerOptions other = OnDevices(scheduling, devices, speed);
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
  const scheduler::SchedulerOptions scheduling = Scheduling("adaptive");
  const scheduler::SchedulerOptions fewer = OnDevices(scheduling, "cpu:2", "1,1.3");
  {
    testing::TempDir dir;
    RunControl control;
    control.checkpoint_dir = dir.path();
    // 0.9 epochs in mega-batches of 1,280 rows: the end falls inside the third, kept open.
    scheduler::TrainOptions options = Options();
    options.mega_batch = 40;
    scheduler::TrainOptions shorter = options;
    shorter.epochs = 0.9;
    TrainFor(shorter, &scheduling, control);
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
  TrainFor(Options(), &scheduling, control, 1);
  scheduler::TrainOptions other = Options();
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
  const scheduler::SchedulerOptions scheduling = Scheduling("adaptive");
  TrainFor(Options(), &scheduling, control, 1);
  scheduler::TrainOptions other = Options();
  other.batch = 64;
  control.resume_dir = dir.path();
  try {
    TrainFor(other, &scheduling, control);
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
  const scheduler::SchedulerOptions scheduling = Scheduling("adaptive");
  TrainFor(Options(), &scheduling, control, 1);
  RewriteCheckpoint(dir.path(), [](nlohmann::json* meta, Sections*) {
    (*meta)["pool"]["devices"][1]["batch"] = 2.0 * Options().batch;
  });
  control.resume_dir = dir.path();
  try {
    TrainFor(Options(), &scheduling, control);
    FAIL() << "expected a refusal";
  } catch (const data::InputError& e) {
    EXPECT_NE(std::string(e.what()).find("bad batch size"), std::string::npos) << e.what();
  }
}

// Each device's momentum goes from the checkpoint's mapping straight into its buffer, and a
// checkpoint writes it from there: a run resumed and stopped at once writes every device's
// momentum (and replica) back, bit for bit.
TEST(Resume, EachDevicesMomentumIsRestoredExactly) {
  testing::TempDir dir;
  RunControl control;
  control.checkpoint_dir = dir.path();
  const scheduler::SchedulerOptions scheduling = Scheduling("adaptive");
  scheduler::TrainOptions options = Options();
  options.input_lr = 0.1f;  // Adagrad's squares in the first layer's part of the buffer
  TrainFor(options, &scheduling, control, 1);
  const std::vector<std::string> names = {"device.0.momentum", "device.1.momentum", "device.2.momentum",
                                          "device.0.params", "device.1.params", "device.2.params"};
  std::vector<std::vector<float>> written;
  {
    const CheckpointReader reader = CheckpointReader::Open(dir.path());
    for (const std::string& name : names) written.push_back(reader.Read<float>(name));
  }
  for (size_t k = 0; k < 3; ++k)
    ASSERT_TRUE(std::any_of(written[k].begin(), written[k].end(), [](float v) { return v != 0.0f; })) << names[k];

  testing::TempDir again;
  control.resume_dir = dir.path();
  control.checkpoint_dir = again.path();
  std::atomic<int> stop{0};
  control.stop_signal = &stop;
  TrainCallbacks callbacks;
  callbacks.on_resume = [&](const std::vector<EvalRecord>&) { stop = 15; };
  const data::GeneratedData& data = Data();
  kernels::Model<float> model =
      kernels::InitModel<float>({data.train.num_features(), options.hidden, data.train.num_labels()}, options.seed);
  EXPECT_EQ(RunMultiDevice(data.train, &data.test, options, scheduling, &model, callbacks, control).stopped_by_signal,
            15);
  const CheckpointReader reader = CheckpointReader::Open(again.path());
  for (size_t k = 0; k < names.size(); ++k) {
    const std::vector<float> restored = reader.Read<float>(names[k], written[k].size());
    EXPECT_TRUE(testing::SameBits(restored.data(), written[k].data(), restored.size())) << names[k];
  }
}

// A momentum of another size than the device keeps is refused on resume, naming the file.
TEST(Resume, AMomentumOfAnotherSizeIsRefusedNamingTheFile) {
  testing::TempDir dir;
  RunControl control;
  control.checkpoint_dir = dir.path();
  const scheduler::SchedulerOptions scheduling = Scheduling("adaptive");
  TrainFor(Options(), &scheduling, control, 1);
  RewriteCheckpoint(dir.path(), [](nlohmann::json*, Sections* sections) {  // a value short in device 1's momentum
    for (auto& [name, bytes] : *sections)
      if (name == "device.1.momentum") bytes.resize(bytes.size() - sizeof(float));
  });
  control.resume_dir = dir.path();
  try {
    TrainFor(Options(), &scheduling, control);
    FAIL() << "expected a refusal";
  } catch (const data::InputError& e) {
    EXPECT_EQ(e.file(), CheckpointPath(dir.path()));
    EXPECT_NE(std::string(e.what()).find("momentum state has"), std::string::npos) << e.what();
  }
}

TEST(Resume, MoreEpochsContinueAFinishedRun) {
  testing::TempDir dir;
  RunControl control;
  control.checkpoint_dir = dir.path();
  const scheduler::SchedulerOptions scheduling = Scheduling("adaptive");
  scheduler::TrainOptions options = Options();
  options.epochs = 1;
  const Outcome first = TrainFor(options, &scheduling, control);
  control.resume_dir = dir.path();
  options.epochs = 2;
  const Outcome more = TrainFor(options, &scheduling, control);
  EXPECT_NEAR(more.records.back().epoch, 2.0, 1e-9);
  EXPECT_GT(more.records.size(), first.records.size());
}

// Stopped between mega-batches (after 2 records) and inside one (in the fourth), each run resumed
// from its checkpoint equals `full`, the uninterrupted run of the same options.
void ExpectStoppedAndResumedRunsEqual(const Outcome& full, const scheduler::TrainOptions& options,
                                      const scheduler::SchedulerOptions* devices, bool single) {
  for (const bool inside : {false, true}) {
    SCOPED_TRACE(inside ? "stopped inside a mega-batch" : "stopped between mega-batches");
    testing::TempDir dir;
    RunControl control;
    control.checkpoint_dir = dir.path();
    const uint64_t rows_per_megabatch = uint64_t(options.mega_batch) * options.batch;
    const Outcome first = inside ? TrainFor(options, devices, control, 0, 3 * rows_per_megabatch + 40)
                                 : TrainFor(options, devices, control, 2);
    EXPECT_NE(first.result.stopped_by_signal, 0);
    control.resume_dir = dir.path();
    const Outcome resumed = TrainFor(options, devices, control);
    EXPECT_EQ(resumed.result.stopped_by_signal, 0);
    ExpectSameRun(full, resumed, single);
  }
}

// --lr-schedule cosine: the factor is a function of the rows trained, so a run stopped (between
// mega-batches, or inside one) and resumed equals the uninterrupted one, on one device and several.
TEST(Resume, ACosineScheduleResumesExactly) {
  for (const std::string algo : {"single", "adaptive"}) {
    SCOPED_TRACE(algo);
    const bool single = algo == "single";
    const scheduler::SchedulerOptions scheduling = Scheduling(algo);
    const scheduler::SchedulerOptions* devices = single ? nullptr : &scheduling;
    scheduler::TrainOptions options = Options();
    options.lr_schedule = scheduler::LrSchedule::kCosine;
    const Outcome full = TrainFor(options, devices, {});
    ASSERT_GE(full.records.size(), 4u);
    // The schedule is in force: the factor falls record by record, and the model is another than
    // the constant rate's.
    for (size_t k = 1; k < full.records.size(); ++k) EXPECT_LT(full.records[k].lr_scale, full.records[k - 1].lr_scale);
    EXPECT_LT(full.records.front().lr_scale, 1.0);
    EXPECT_LT(full.records.back().lr_scale, 0.05);
    const Outcome constant = TrainFor(Options(), devices, {});
    EXPECT_EQ(constant.records.back().lr_scale, 1.0);
    EXPECT_FALSE(testing::SameBits(full.model.params.data(), constant.model.params.data(), full.model.params.size()));

    ExpectStoppedAndResumedRunsEqual(full, options, devices, single);
  }
}

// --dropout draws its masks from the seed, the device and the device's step count, which the
// checkpoint keeps: a run with dropout and weight decay, stopped between or inside mega-batches and
// resumed, equals the uninterrupted one, on one device and several.
TEST(Resume, DropoutAndWeightDecayResumeExactly) {
  for (const std::string algo : {"single", "adaptive"}) {
    SCOPED_TRACE(algo);
    const bool single = algo == "single";
    const scheduler::SchedulerOptions scheduling = Scheduling(algo);
    const scheduler::SchedulerOptions* devices = single ? nullptr : &scheduling;
    scheduler::TrainOptions options = Options();
    options.dropout = 0.3f;
    options.weight_decay = 1e-3f;
    const Outcome full = TrainFor(options, devices, {});
    const Outcome plain = TrainFor(Options(), devices, {});
    EXPECT_FALSE(testing::SameBits(full.model.params.data(), plain.model.params.data(), full.model.params.size()));
    ExpectStoppedAndResumedRunsEqual(full, options, devices, single);
  }
}

// A bf16 optimizer state (--optimizer-state bf16) rounds with noise drawn from the device's step
// count, which the checkpoint keeps, and streams its values as floats a bf16 holds exactly: a run
// stopped between or inside mega-batches and resumed equals the uninterrupted one, on one device
// and several, with momentum and the first layer's Adagrad. Resumed with an fp32 state, it is
// refused naming the flag.
TEST(Resume, ABf16OptimizerStateResumesExactly) {
  if (!kernels::cpu::Bf16Available(nullptr)) GTEST_SKIP() << "no native bf16 here: the bf16 state needs bf16 products";
  for (const std::string algo : {"single", "adaptive"}) {
    SCOPED_TRACE(algo);
    const bool single = algo == "single";
    const scheduler::SchedulerOptions scheduling = Scheduling(algo);
    const scheduler::SchedulerOptions* devices = single ? nullptr : &scheduling;
    scheduler::TrainOptions options = Options();
    options.math = kernels::OutputMath::kBf16;
    options.input_lr = 0.05f;
    scheduler::TrainOptions fp32_state = options;
    options.bf16_optimizer_state = true;
    const Outcome full = TrainFor(options, devices, {});
    const Outcome fp32 = TrainFor(fp32_state, devices, {});
    EXPECT_FALSE(testing::SameBits(full.model.params.data(), fp32.model.params.data(), full.model.params.size()));
    ExpectStoppedAndResumedRunsEqual(full, options, devices, single);
  }
  scheduler::TrainOptions bf16 = Options();
  bf16.math = kernels::OutputMath::kBf16;
  bf16.bf16_optimizer_state = true;
  scheduler::TrainOptions fp32 = bf16;
  fp32.bf16_optimizer_state = false;
  const std::optional<RunMismatch> refusal = ResumeRefusal(bf16, fp32);
  ASSERT_TRUE(refusal);
  ASSERT_EQ(refusal->differences().size(), 1u) << refusal->what();
  EXPECT_EQ(refusal->differences()[0].name, "optimizer_state");
}

// bf16 weights (--weights bf16) round with noise drawn from the device's step count too, and a
// checkpoint writes the replica widened, a piece at a time. The merges of several devices round
// what they write into the replicas with noise drawn from the seed, the mega-batch and the merges
// before it in the mega-batch (sync merges every round). A run stopped between or inside
// mega-batches and resumed equals the uninterrupted one, on one device and on three merged by each
// merge: adaptive, gradient aggregation every round (sync), the elastic force (EASGD: each replica
// keeps its own state), CROSSBOW's and Adasum. One device's final model holds bf16 values only (w
// is the widened replica). Resumed with fp32 weights, a run is refused naming the flag; the sampled
// step, whose devices keep fp32 parameters, refuses bf16 weights.
TEST(Resume, Bf16WeightsResumeExactly) {
  if (!kernels::cpu::Bf16Available(nullptr)) GTEST_SKIP() << "no native bf16 here: bf16 weights need bf16 products";
  scheduler::TrainOptions options = Options();
  options.math = kernels::OutputMath::kBf16;
  options.input_lr = 0.05f;
  options.bf16_optimizer_state = true;
  scheduler::TrainOptions fp32_weights = options;
  options.bf16_weights = true;
  for (const std::string algo : {"single", "adaptive", "sync", "elastic", "crossbow", "adasum"}) {
    SCOPED_TRACE(algo);
    const bool single = algo == "single";
    const scheduler::SchedulerOptions scheduling = Scheduling(algo);
    const scheduler::SchedulerOptions* devices = single ? nullptr : &scheduling;
    const Outcome full = TrainFor(options, devices, {});
    const Outcome fp32 = TrainFor(fp32_weights, devices, {});
    EXPECT_FALSE(testing::SameBits(full.model.params.data(), fp32.model.params.data(), full.model.params.size()));
    if (single)
      for (const float w : full.model.params) ASSERT_EQ(w, kernels::cpu::Bf16ToFloat(kernels::cpu::FloatToBf16(w)));
    ExpectStoppedAndResumedRunsEqual(full, options, devices, single);
  }

  const std::optional<RunMismatch> refusal = ResumeRefusal(options, fp32_weights);
  ASSERT_TRUE(refusal);
  ASSERT_EQ(refusal->differences().size(), 1u) << refusal->what();
  EXPECT_EQ(refusal->differences()[0].name, "weights");
  // Refused by the settings, before any training (the merges would refuse bf16 replicas too).
  {
    scheduler::SchedulerOptions refused = Scheduling("adaptive");
    refused.sampled_output = SmallSampledOutput();
    try {
      TrainFor(options, &refused, {});
      ADD_FAILURE() << "bf16 weights were not refused";
    } catch (const scheduler::OptionError& e) {
      EXPECT_EQ(e.setting(), "weights") << e.what();
    }
  }
}

TEST(Resume, AnotherDropoutIsRefused) {
  scheduler::TrainOptions first = Options(), resumed = Options();
  first.dropout = 0.3f;
  resumed.dropout = 0.5f;
  const std::optional<RunMismatch> refusal = ResumeRefusal(first, resumed);
  ASSERT_TRUE(refusal);
  ASSERT_EQ(refusal->differences().size(), 1u) << refusal->what();
  EXPECT_EQ(refusal->differences()[0].name, "dropout");
}

TEST(Resume, AnotherLrScheduleIsRefused) {
  scheduler::TrainOptions cosine = Options();
  cosine.lr_schedule = scheduler::LrSchedule::kCosine;
  const std::optional<RunMismatch> refusal = ResumeRefusal(Options(), cosine);
  ASSERT_TRUE(refusal);
  ASSERT_EQ(refusal->differences().size(), 1u) << refusal->what();
  EXPECT_EQ(refusal->differences()[0].name, "lr_schedule");
  EXPECT_EQ(refusal->differences()[0].checkpoint, "(not set)");
  EXPECT_EQ(refusal->differences()[0].now, "\"cosine\"");
}

}  // namespace
}  // namespace xmlt::run
