// Stop and resume with CUDA devices is exact, as the CPU tests demand of CPU devices
// (tests/scheduler/reliability_test.cc): a run stopped inside a mega-batch, checkpointed and
// resumed equals the uninterrupted run, record for record and bit for bit. On a GPU the replica
// lives in device memory and the host holds a mirror, so a checkpoint that read a stale mirror
// (last refreshed at the previous merge) would lose the work since that merge: this test sees it.
#include <gtest/gtest.h>

#include <atomic>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "scheduler/checkpoint_file.h"
#include "scheduler/multi_device_run.h"
#include "scheduler/run_progress.h"
#include "tests/kernels/cuda_test_gate.h"
#include "tests/scheduler/scheduler_test_support.h"
#include "tests/test_support.h"

namespace xmlt::scheduler {
namespace {

const data::GeneratedData& Data() {
  static const data::GeneratedData data = testing::NormalizedData(1500, 200, 300, 30, 12, 5);
  return data;
}

TrainOptions Options() {
  TrainOptions options;
  options.epochs = 1;
  options.batch = 32;
  options.mega_batch = 8;
  options.hidden = {16};
  options.eval.kind = EvalSchedule::Kind::kEveryMegaBatches;
  options.eval.mega_batches = 2;
  return options;
}

struct Outcome {
  std::vector<EvalRecord> records;
  kernels::Model<float> model;
  TrainResult result;
};

// Trains (or resumes); `stop_at_rows` > 0 raises the stop flag once a batch brings the rows
// trained to that many.
Outcome TrainFor(const EngineOptions& engine, RunControl control, uint64_t stop_at_rows = 0) {
  const data::GeneratedData& data = Data();
  const TrainOptions options = Options();
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
  out.result = RunMultiDevice(data.train, &data.test, options, engine, &out.model, callbacks, control);
  return out;
}

class CudaResumeTest : public ::testing::TestWithParam<std::string> {};

TEST_P(CudaResumeTest, AStopInsideAMegaBatchResumesToTheUninterruptedRun) {
  XMLT_SKIP_WITHOUT_GPU();
  EngineOptions engine = testing::WithAlgo(testing::VirtualClockEngine("cuda:0,cuda:1,cpu:1", "1,1.3,1.8"), GetParam());
  engine.momentum = 0.5;
  const Outcome full = TrainFor(engine, {});
  ASSERT_GE(full.records.size(), 2u);

  testing::TempDir dir;
  RunControl control;
  control.checkpoint_dir = dir.path();
  const uint64_t rows_per_megabatch = uint64_t(Options().mega_batch) * Options().batch;
  const Outcome first = TrainFor(engine, control, 2 * rows_per_megabatch + 40);
  EXPECT_EQ(first.result.stopped_by_signal, 2);
  const nlohmann::json progress = nlohmann::json::parse(CheckpointReader::Open(dir.path()).meta()).at("progress");
  EXPECT_EQ(progress.at("megabatches").get<uint64_t>(), 2u) << "the stop fell inside the third mega-batch";

  control.resume_dir = dir.path();
  const Outcome resumed = TrainFor(engine, control);
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

}  // namespace
}  // namespace xmlt::scheduler
