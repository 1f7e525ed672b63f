// --cpu-output sampled: the CPU devices of a multi-device run train with SLIDE's sampled output
// layer (engine/sampled_cpu_device.h) and are merged like any replica. With two such devices a
// resumed run is the uninterrupted one (each device's checkpoint keeps its tables), the devices
// step without local momentum, the memory plan counts their tables, and on Bibtex the run learns.
#include <gtest/gtest.h>
#include <tbb/global_control.h>

#include <algorithm>
#include <string>

#include "data/dataset_loader.h"
#include "engine/device_query.h"
#include "engine/device_spec.h"
#include "run/checkpoint_file.h"
#include "run/multi_device_run.h"
#include "scheduler/memory_plan.h"
#include "tests/run/reliability_support.h"
#include "tests/scheduler/scheduler_test_support.h"
#include "tests/test_support.h"

namespace xmlt::run {
namespace {

using namespace reliability;

// Adaptive SGD on two CPU devices 1.5x apart, both sampled: 500 labels, active sets of at least
// 24, rehashes inside each mega-batch (as tests/run/slide_resume_test.cc).
scheduler::SchedulerOptions SampledCpus() {
  scheduler::SchedulerOptions scheduling = OnDevices(Scheduling("adaptive"), "cpu:2", "1,1.5");
  scheduling.sampled_output = SmallSampledOutput();
  return scheduling;
}

// The run's local momentum stays 0.9: the sampled devices step without it (the device pool gives
// them none) rather than refuse the run, at 10 x the rate: 1, as tests/run/slide_resume_test.cc.
scheduler::TrainOptions SampledOptions() {
  scheduler::TrainOptions options = Options();
  options.local_momentum = 0.9f;
  options.lr = 0.1f;
  return options;
}

TEST(CpuSampledRun, TwoSampledCpuDevicesResumeToTheUninterruptedRun) {
  tbb::global_control one_thread(tbb::global_control::max_allowed_parallelism, 1);
  const scheduler::TrainOptions options = SampledOptions();
  const scheduler::SchedulerOptions scheduling = SampledCpus();
  const Outcome full = TrainFor(options, &scheduling, {});
  ASSERT_GE(full.records.size(), 4u);
  const uint64_t rows_per_megabatch = uint64_t(options.mega_batch) * options.batch;
  for (const bool inside : {false, true}) {
    SCOPED_TRACE(inside ? "stopped inside a mega-batch" : "stopped after an evaluation");
    testing::TempDir dir;
    RunControl control;
    control.checkpoint_dir = dir.path();
    control.checkpoint_every = 1;
    const Outcome first = inside ? TrainFor(options, &scheduling, control, 0, 3 * rows_per_megabatch + 3 * options.batch)
                                 : TrainFor(options, &scheduling, control, 2);
    EXPECT_NE(first.result.stopped_by_signal, 0);
    const CheckpointReader checkpoint = CheckpointReader::Open(dir.path());
    EXPECT_TRUE(checkpoint.Has("device.0.extra") && checkpoint.Has("device.1.extra"))
        << "each sampled device's tables are in the checkpoint";
    control.resume_dir = dir.path();
    const Outcome resumed = TrainFor(options, &scheduling, control);
    EXPECT_EQ(resumed.result.stopped_by_signal, 0);
    ExpectSameRun(full, resumed, /*wall_clock_steps=*/false);
  }
}

// A mixed list (here where a GPU, or the simulator's, is present): the CPU device is sampled, the
// GPU is not, the merge is the host's, and the resume is exact.
TEST(CpuSampledRun, BesideAGpuOnlyTheCpuDeviceIsSampledAndTheResumeIsExact) {
  if (engine::CudaDeviceCount() == 0) GTEST_SKIP() << "no GPU (a CUDA or -DXMLT_CUDA=SIM build with a GPU)";
  tbb::global_control one_thread(tbb::global_control::max_allowed_parallelism, 1);
  const scheduler::TrainOptions options = SampledOptions();
  scheduler::SchedulerOptions scheduling = SampledCpus();
  scheduling.devices = engine::ParseDeviceList("cuda:0,cpu:1");
  const Outcome full = TrainFor(options, &scheduling, {});
  EXPECT_LT(full.records.back().test.loss, 0.9 * full.records.front().test.loss);
  testing::TempDir dir;
  RunControl control;
  control.checkpoint_dir = dir.path();
  control.checkpoint_every = 1;
  const Outcome first = TrainFor(options, &scheduling, control, 2);
  EXPECT_NE(first.result.stopped_by_signal, 0);
  const CheckpointReader checkpoint = CheckpointReader::Open(dir.path());
  EXPECT_FALSE(checkpoint.Has("device.0.extra")) << "the GPU has no tables";
  EXPECT_TRUE(checkpoint.Has("device.1.extra")) << "the CPU device's tables are in the checkpoint";
  control.resume_dir = dir.path();
  const Outcome resumed = TrainFor(options, &scheduling, control);
  ExpectSameRun(full, resumed, /*wall_clock_steps=*/false);
}

TEST(CpuSampledRun, ItLearnsAndIsNotTheDenseRun) {
  tbb::global_control one_thread(tbb::global_control::max_allowed_parallelism, 1);
  scheduler::TrainOptions options = SampledOptions();
  scheduler::SchedulerOptions scheduling = SampledCpus();
  const Outcome sampled = TrainFor(options, &scheduling, {});
  EXPECT_LT(sampled.records.back().test.loss, 0.9 * sampled.records.front().test.loss);
  scheduling.sampled_output.enabled = false;  // dense devices, plain SGD at the sampled devices' rate
  options.local_momentum = 0;
  options.lr = 1;
  const Outcome dense = TrainFor(options, &scheduling, {});
  EXPECT_NE(sampled.model.params, dense.model.params);
}

TEST(CpuSampledRun, TheMemoryPlanCountsTheTablesOfTheCpuDevicesOnly) {
  const data::GeneratedData& data = Data();
  const kernels::ModelShape shape{data.train.num_features(), {16}, data.train.num_labels()};
  const scheduler::TrainOptions options = SampledOptions();
  scheduler::SchedulerOptions scheduling = SampledCpus();
  const engine::DeviceLimits limits = engine::LimitsFor(data.train, options.batch);
  const scheduler::MemoryPlan sampled =
      scheduler::PlanMemory(shape, options, scheduling, limits, data.train.num_rows(), false);
  scheduling.sampled_output.enabled = false;
  const scheduler::MemoryPlan dense =
      scheduler::PlanMemory(shape, options, scheduling, limits, data.train.num_rows(), false);
  ASSERT_EQ(sampled.devices.size(), 2u);
  for (size_t i = 0; i < 2; ++i) {
    EXPECT_GE(sampled.devices[i].workspace, scheduling.sampled_output.TableBytes(shape.num_labels));
    EXPECT_EQ(sampled.devices[i].momentum, 0u) << "plain SGD: no velocity";
    EXPECT_GT(dense.devices[i].momentum, 0u);
  }
  // With the first layer's Adagrad, a sampled device holds its squares: one per first-layer weight.
  scheduler::TrainOptions adagrad = options;
  adagrad.input_lr = 0.1f;
  scheduling.sampled_output.enabled = true;
  const scheduler::MemoryPlan with_squares =
      scheduler::PlanMemory(shape, adagrad, scheduling, limits, data.train.num_rows(), false);
  for (const scheduler::DeviceMemory& d : with_squares.devices)
    EXPECT_EQ(d.momentum, uint64_t(shape.num_features) * shape.hidden[0] * sizeof(float));
}

// Bibtex (159 labels, fewer than the active-set minimum of 1000: every row trains on all of its
// labels, so this is the sampled devices' plain SGD against the dense default's momentum), two
// CPU devices, adaptive SGD at the CLI's preset (--lr 0.3 scaled linearly to 0.6, local momentum
// 0.9: the sampled devices step at 6).
TEST(CpuSampledRun, BibtexTwoSampledCpuDevicesLearn) {
  const std::string folder = testing::SharedDataDir("bibtex");
  if (folder.empty()) GTEST_SKIP() << "bibtex not found (set XMLT_DATA_DIR or provide ../shared/data/bibtex)";
  const data::Dataset train = data::LoadDataset(folder + "/train.txt");
  const data::Dataset test = data::LoadDataset(folder + "/test.txt");
  scheduler::TrainOptions options;
  options.epochs = 5;
  options.batch = 128;
  options.hidden = {128};
  options.lr = 0.6f;
  options.local_momentum = 0.9f;
  options.mega_batch = 19;  // the preset: half an epoch
  scheduler::SchedulerOptions scheduling = testing::VirtualClockScheduling("cpu:2", "1,1");
  scheduling.sampled_output = engine::SampledOutputOptions::PresetFor(std::max(train.num_labels(), test.num_labels()));
  scheduling.sampled_output.enabled = true;
  const kernels::ModelShape shape{std::max(train.num_features(), test.num_features()), options.hidden,
                                  std::max(train.num_labels(), test.num_labels())};
  kernels::Model<float> model = kernels::InitModel<float>(shape, options.seed);
  double best = 0;
  TrainCallbacks callbacks;
  callbacks.on_eval = [&](const EvalRecord& r) { best = std::max(best, r.test.metrics.p1); };
  testing::TempDir dir;
  RunControl control;
  control.checkpoint_dir = dir.path();  // written at the end: the devices' tables show they were sampled
  RunMultiDevice(train, &test, options, scheduling, &model, callbacks, control);
  const CheckpointReader checkpoint = CheckpointReader::Open(dir.path());
  EXPECT_TRUE(checkpoint.Has("device.0.extra") && checkpoint.Has("device.1.extra")) << "not sampled devices";
  EXPECT_GE(best, 0.48) << "best P@1 over 5 epochs (measured 0.515)";
}

}  // namespace
}  // namespace xmlt::run
