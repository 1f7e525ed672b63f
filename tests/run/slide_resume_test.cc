// --algo slide's device (engine/sampled_cpu_device.h) through the training loop: on one thread a
// run stopped between or inside mega-batches and resumed from its checkpoint is the uninterrupted
// run, record for record and bit for bit (the checkpoint keeps the LSH tables and the rehash
// schedule's place, and with dropout and Adagrad the step count and the squares); the run learns;
// the tables change what it trains (it is not the dense step).
#include <gtest/gtest.h>
#include <tbb/global_control.h>

#include <string>

#include "run/checkpoint_file.h"
#include "run/multi_device_run.h"
#include "run/one_device_run.h"
#include "tests/run/reliability_support.h"
#include "tests/scheduler/scheduler_test_support.h"
#include "tests/test_support.h"

namespace xmlt::run {
namespace {

using namespace reliability;

// One sampled CPU device (SmallSampledOutput).
scheduler::SchedulerOptions SlideScheduling() {
  scheduler::SchedulerOptions scheduling = SingleDeviceScheduling(engine::DeviceSpec{});
  scheduling.sampled_output = SmallSampledOutput();
  return scheduling;
}

scheduler::TrainOptions SlideOptions() {
  scheduler::TrainOptions options = Options();
  options.local_momentum = 0;
  options.lr = 1;
  return options;
}

// The regularized step as the command line's defaults give it: dropout 0.5 (its masks follow the
// step count, which the checkpoint keeps) and the first layer's Adagrad (its squares are the
// device's optimizer state).
scheduler::TrainOptions RegularizedSlideOptions() {
  scheduler::TrainOptions options = SlideOptions();
  options.dropout = 0.5f;
  options.input_lr = 0.1f;
  return options;
}

TEST(SlideResume, AStopBetweenOrInsideMegaBatchesResumesToTheUninterruptedRun) {
  tbb::global_control one_thread(tbb::global_control::max_allowed_parallelism, 1);
  for (const scheduler::TrainOptions& options : {SlideOptions(), RegularizedSlideOptions()}) {
  SCOPED_TRACE(options.dropout != 0 ? "dropout and Adagrad" : "plain SGD");
  const scheduler::SchedulerOptions scheduling = SlideScheduling();
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
    EXPECT_TRUE(CheckpointReader::Open(dir.path()).Has("device.0.extra")) << "the tables are not in the checkpoint";
    control.resume_dir = dir.path();
    const Outcome resumed = TrainFor(options, &scheduling, control);
    EXPECT_EQ(resumed.result.stopped_by_signal, 0);
    ExpectSameRun(full, resumed, /*wall_clock_steps=*/true);
  }
  }
}

TEST(SlideResume, ItLearnsAndTheTablesChangeWhatItTrains) {
  tbb::global_control one_thread(tbb::global_control::max_allowed_parallelism, 1);
  const scheduler::TrainOptions options = SlideOptions();
  scheduler::SchedulerOptions scheduling = SlideScheduling();
  const Outcome slide = TrainFor(options, &scheduling, {});
  EXPECT_LT(slide.records.back().test.loss, 0.9 * slide.records.front().test.loss);
  scheduling.sampled_output.enabled = false;  // the dense step at the same rate
  const Outcome dense = TrainFor(options, &scheduling, {});
  EXPECT_NE(slide.model.params, dense.model.params);
}

TEST(SlideResume, DropoutAndAdagradChangeTheStepAndItStillLearns) {
  tbb::global_control one_thread(tbb::global_control::max_allowed_parallelism, 1);
  const scheduler::SchedulerOptions scheduling = SlideScheduling();
  const Outcome plain = TrainFor(SlideOptions(), &scheduling, {});
  const Outcome regularized = TrainFor(RegularizedSlideOptions(), &scheduling, {});
  EXPECT_LT(regularized.records.back().test.loss, 0.9 * regularized.records.front().test.loss);
  EXPECT_NE(plain.model.params, regularized.model.params);
}

}  // namespace
}  // namespace xmlt::run
