// The training loop's reliability with CUDA devices, as tests/scheduler/reliability_test.cc checks
// it with CPU devices. Stop and resume is exact: a run stopped inside a mega-batch, checkpointed and
// resumed equals the uninterrupted run, record for record and bit for bit (on a GPU the replica
// lives in device memory and the host holds a mirror, so a checkpoint that read a stale mirror
// would lose the work since the last merge: this test sees it). A divergence rolls the GPU
// replicas back with the CPU's.
#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "run/checkpoint_file.h"
#include "run/multi_device_run.h"
#include "run/run_progress.h"
#include "tests/kernels/cuda_test_gate.h"
#include "tests/scheduler/scheduler_test_support.h"
#include "tests/test_support.h"

namespace xmlt::run {
namespace {

const data::GeneratedData& Data() {
  static const data::GeneratedData data = testing::NormalizedData(1500, 200, 300, 30, 12, 5);
  return data;
}

scheduler::TrainOptions Options() { return testing::ShortRunOptions(1); }

struct Outcome {
  std::vector<EvalRecord> records;
  kernels::Model<float> model;
  TrainResult result;
};

// Trains (or resumes); `stop_at_rows` > 0 raises the stop flag once a batch brings the rows
// trained to that many.
Outcome TrainFor(const scheduler::SchedulerOptions& scheduling, RunControl control, uint64_t stop_at_rows) {
  const data::GeneratedData& data = Data();
  const scheduler::TrainOptions options = Options();
  Outcome out;
  out.model = kernels::InitModel<float>({data.train.num_features(), options.hidden, data.train.num_labels()}, 1);
  std::atomic<int> stop{0};
  control.stop_signal = &stop;
  TrainCallbacks callbacks;
  callbacks.on_resume = [&](const std::vector<EvalRecord>& earlier) { out.records = earlier; };
  callbacks.on_eval = [&](const EvalRecord& r) { out.records.push_back(r); };
  callbacks.on_progress = [&](uint64_t done, uint64_t, double) {
    if (stop_at_rows > 0 && done >= stop_at_rows) stop = 2;
  };
  out.result = RunMultiDevice(data.train, &data.test, options, scheduling, &out.model, callbacks, control);
  return out;
}

class CudaResumeTest : public ::testing::TestWithParam<std::string> {};

TEST_P(CudaResumeTest, AStopInsideAMegaBatchResumesToTheUninterruptedRun) {
  XMLT_SKIP_WITHOUT_GPU();
  scheduler::SchedulerOptions scheduling =
      testing::WithAlgo(testing::VirtualClockScheduling("cuda:0,cuda:1,cpu:1", "1,1.3,1.8"), GetParam());
  scheduling.merge_rule.momentum = 0.5;
  const Outcome full = TrainFor(scheduling, {}, 0);
  ASSERT_GE(full.records.size(), 2u);

  testing::TempDir dir;
  RunControl control;
  control.checkpoint_dir = dir.path();
  const uint64_t rows_per_megabatch = uint64_t(Options().mega_batch) * Options().batch;
  const Outcome first = TrainFor(scheduling, control, 2 * rows_per_megabatch + 40);
  EXPECT_EQ(first.result.stopped_by_signal, 2);
  const nlohmann::json progress = nlohmann::json::parse(CheckpointReader::Open(dir.path()).meta()).at("progress");
  EXPECT_EQ(progress.at("megabatches").get<uint64_t>(), 2u) << "the stop fell inside the third mega-batch";

  control.resume_dir = dir.path();
  const Outcome resumed = TrainFor(scheduling, control, 0);
  EXPECT_EQ(resumed.result.stopped_by_signal, 0);
  ASSERT_EQ(full.records.size(), resumed.records.size());
  for (size_t k = 0; k < full.records.size(); ++k) {
    EvalRecord x = full.records[k], y = resumed.records[k];
    x.wall_time_s = y.wall_time_s = x.eval_time_s = y.eval_time_s = 0;
    EXPECT_EQ(ToJson(x), ToJson(y)) << "evaluation " << k;
  }
  ASSERT_EQ(full.model.params.size(), resumed.model.params.size());
  EXPECT_TRUE(testing::SameBits(full.model.params.data(), resumed.model.params.data(), full.model.params.size()))
      << "the resumed run's model differs from the uninterrupted run's";
}

INSTANTIATE_TEST_SUITE_P(Merges, CudaResumeTest, ::testing::Values("adaptive", "elastic", "adasum", "sync", "crossbow"),
                         testing::AlgoTestName);

// A NaN loss injected on cuda:1 in mega-batch 3: the run rolls back once, every replica (the
// GPUs' in device memory too) restarts from the last trusted model at half the rate, and the run
// follows the same rollback on CPU devices: per-evaluation training loss within 1e-3 relative (a
// GPU replica left one mega-batch ahead would be far off) and P@1 within 0.02.
TEST(CudaRollback, ADivergenceRollsTheGpuReplicasBackWithTheCpus) {
  XMLT_SKIP_WITHOUT_GPU();
  RunControl control;
  scheduler::FaultInjection nan;
  nan.kind = scheduler::FaultInjection::Kind::kNaN;
  nan.device = 1;
  nan.megabatch = 3;
  control.faults = {nan};
  Outcome runs[2];
  const char* devices[2] = {"cpu:3", "cuda:0,cuda:1,cpu:1"};
  for (int k = 0; k < 2; ++k) {
    scheduler::SchedulerOptions scheduling =
        testing::WithAlgo(testing::VirtualClockScheduling(devices[k], "1,1.3,1.8"), "adaptive");
    scheduling.merge_rule.momentum = 0.5;
    runs[k] = TrainFor(scheduling, control, 0);
    EXPECT_EQ(runs[k].result.rollbacks, 1u) << devices[k];
  }
  ASSERT_EQ(runs[0].records.size(), runs[1].records.size());
  for (size_t e = 0; e < runs[0].records.size(); ++e) {
    const EvalRecord &cpu = runs[0].records[e], &gpu = runs[1].records[e];
    EXPECT_EQ(cpu.train_samples, gpu.train_samples) << "evaluation " << e;
    EXPECT_NEAR(gpu.train_loss, cpu.train_loss, 1e-3 * std::abs(cpu.train_loss)) << "evaluation " << e;
    EXPECT_NEAR(gpu.test.metrics.p1, cpu.test.metrics.p1, 0.02) << "evaluation " << e;
  }
  for (float w : runs[1].model.params) ASSERT_TRUE(std::isfinite(w));
}

}  // namespace
}  // namespace xmlt::run
