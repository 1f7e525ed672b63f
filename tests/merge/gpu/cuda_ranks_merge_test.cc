// A run over several ranks (threads playing them, ranks::MakeThreadGroups) whose devices are all
// GPUs, with --collective nccl: its merges run on one NCCL communicator over every rank's GPUs, on
// the replicas where they are (MergesOnGpus, the summary's merge_on). Against the same ranks merged
// on the host mirrors (--merge-on host), for 2 ranks of 1 and of 2 GPUs and 3 ranks of 1 GPU (a
// model size not divisible by 3): the same evaluations within the bound of the one-process GPU
// merges (P@1 within 0.005, the training loss within 1e-4 relative), and the same global model on
// every rank, to the bit. An exact resume from a checkpoint; a GPU lost on one rank stops every
// rank with an error, without a hang.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <exception>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "data/synthetic_generator.h"
#include "kernels/cuda/device_count.h"
#include "kernels/model.h"
#include "ranks/rank_group.h"
#include "run/multi_device_run.h"
#include "tests/kernels/cuda_test_gate.h"
#include "tests/scheduler/scheduler_test_support.h"
#include "tests/test_support.h"
#ifdef XMLT_GPUSIM
#include <cuda_runtime.h>

#include <iostream>

#include "gpusim/faults.h"
#include "gpusim/traffic.h"
#endif

namespace xmlt::run {
namespace {

const data::GeneratedData& Data() {
  static const data::GeneratedData data = xmlt::testing::NormalizedData(1500, 200, 301, 40, 10, 7);
  return data;
}

struct Outcome {
  std::vector<EvalRecord> records;
  std::vector<float> model;
  std::string error;  // what the run threw, if it did
};

// `ranks` ranks of `per_rank` GPUs each, rank r on GPUs r * per_rank ..., on the virtual clock.
scheduler::SchedulerOptions RanksScheduling(const std::string& algo, int ranks, int per_rank) {
  std::string devices, speeds;
  for (int g = 0; g < ranks * per_rank; ++g) {
    devices += (g == 0 ? "" : ",") + std::string("cuda:") + std::to_string(g);
    speeds += (g == 0 ? "" : ",") + std::to_string(1 + 0.1 * g);
  }
  scheduler::SchedulerOptions scheduling = xmlt::testing::WithAlgo(xmlt::testing::VirtualClockScheduling(devices, speeds), algo);
  for (int g = 0; g < ranks * per_rank; ++g) {
    scheduling.devices[size_t(g)].id += "@r" + std::to_string(g / per_rank);
    scheduling.device_rank.push_back(g / per_rank);
  }
  return scheduling;
}

// Every rank's outcome of the run `scheduling` describes, one thread per rank.
std::vector<Outcome> TrainOnRanks(const scheduler::SchedulerOptions& scheduling, int ranks,
                                  const scheduler::TrainOptions& options, const RunControl& control = {}) {
  std::vector<std::unique_ptr<xmlt::ranks::RankGroup>> groups =
      xmlt::ranks::MakeThreadGroups(ranks, std::chrono::seconds(30));
  std::vector<Outcome> outcomes(static_cast<size_t>(ranks));
  std::vector<std::thread> threads;
  for (int r = 0; r < ranks; ++r) {
    threads.emplace_back([&, r] {
      Outcome& outcome = outcomes[size_t(r)];
      try {
        const data::GeneratedData& data = Data();
        kernels::Model<float> model = kernels::InitModel<float>(
            {data.train.num_features(), options.hidden, data.train.num_labels()}, options.seed);
        TrainCallbacks callbacks;
        callbacks.on_eval = [&](const EvalRecord& record) { outcome.records.push_back(record); };
        RunMultiDevice(data.train, &data.test, options, scheduling, &model, callbacks, control, groups[size_t(r)].get());
        outcome.model = model.params;
      } catch (const std::exception& e) {
        outcome.error = e.what();
      }
    });
  }
  for (std::thread& t : threads) t.join();
  return outcomes;
}

size_t ModelSize(const scheduler::TrainOptions& options) {
  const data::GeneratedData& data = Data();
  return kernels::InitModel<float>({data.train.num_features(), options.hidden, data.train.num_labels()}, 1)
      .params.size();
}

TEST(CudaRanksMerge, NcclAcrossRanksEqualsTheHostMergeAndEveryRankHasTheSameModel) {
  XMLT_SKIP_WITHOUT_GPU();
  const int gpus = kernels::cuda::CudaDeviceCountOrZero();
  const scheduler::TrainOptions options = xmlt::testing::ShortRunOptions(2);
  struct Shape {
    int ranks, per_rank;
  };
  int ran = 0;
  for (const Shape shape : {Shape{2, 1}, Shape{2, 2}, Shape{3, 1}}) {
    if (shape.ranks * shape.per_rank > gpus) continue;  // on 4 simulated GPUs (ctest's .on_4_gpus) all run
    if (shape.ranks == 3) {
      ASSERT_NE(ModelSize(options) % 3, 0u) << "the model size should not be divisible by the GPU count";
    }
    for (const std::string algo : {"adaptive", "sync"}) {
      const std::string where = algo + " on " + std::to_string(shape.ranks) + " ranks of " +
                                std::to_string(shape.per_rank) + " GPUs";
      scheduler::SchedulerOptions nccl = RanksScheduling(algo, shape.ranks, shape.per_rank);
      nccl.collective = merge::CollectiveKind::kNccl;
      scheduler::SchedulerOptions host = RanksScheduling(algo, shape.ranks, shape.per_rank);
      host.merge_on = scheduler::SchedulerOptions::MergeOn::kHost;
      // What the summary's merge_on reports (apps/command_train.cc), on any rank.
      EXPECT_TRUE(scheduler::MergesOnGpus(nccl)) << where;
      EXPECT_FALSE(scheduler::MergesOnGpus(host)) << where;

      // The command line's momenta (apps/train_presets.cc): adaptive the replicas' only, sync the
      // merge's only (a momentum on a momentum oscillates here; see ranks_run_test.cc).
      scheduler::TrainOptions run = options;
      nccl.merge_rule.momentum = host.merge_rule.momentum = algo == "sync" ? 0.9 : 0.0;
      run.local_momentum = algo == "sync" ? 0.0f : 0.9f;
#ifdef XMLT_GPUSIM
      gpusim::ResetTraffic();
#endif
      const std::vector<Outcome> on_gpus = TrainOnRanks(nccl, shape.ranks, run);
#ifdef XMLT_GPUSIM
      // NCCL moved the sums between the GPUs (the simulator counts its ring's traffic); the host
      // merge moves nothing between GPUs.
      for (int g = 0; g < shape.ranks * shape.per_rank; ++g)
        EXPECT_GT(gpusim::TrafficOf(g).peer_sent, 0u) << where << ": GPU " << g << " sent nothing";
      gpusim::ResetTraffic();
#endif
      const std::vector<Outcome> on_host = TrainOnRanks(host, shape.ranks, run);
#ifdef XMLT_GPUSIM
      for (int g = 0; g < shape.ranks * shape.per_rank; ++g)
        EXPECT_EQ(gpusim::TrafficOf(g).peer_sent, 0u) << where << ": GPU " << g << " in the host merge";
#endif
      for (int r = 0; r < shape.ranks; ++r) {
        const Outcome &g = on_gpus[size_t(r)], &h = on_host[size_t(r)];
        ASSERT_EQ(g.error, "") << where << ", rank " << r;
        ASSERT_EQ(h.error, "") << where << ", rank " << r;
        EXPECT_EQ(g.model, on_gpus[0].model) << where << ": rank " << r << "'s global model differs from rank 0's";
        ASSERT_EQ(g.records.size(), h.records.size()) << where;
        ASSERT_FALSE(g.records.empty()) << where;
        for (size_t e = 0; e < g.records.size(); ++e) {
          EXPECT_EQ(g.records[e].train_samples, h.records[e].train_samples) << where << ", evaluation " << e;
          EXPECT_NEAR(g.records[e].test.metrics.p1, h.records[e].test.metrics.p1, 0.005)
              << where << ", rank " << r << ", evaluation " << e;
          EXPECT_NEAR(g.records[e].train_loss, h.records[e].train_loss, 1e-4 * std::abs(h.records[e].train_loss))
              << where << ", rank " << r << ", evaluation " << e;
        }
      }
      EXPECT_GT(on_gpus[0].records.back().test.metrics.p1, on_gpus[0].records.front().test.metrics.p1 + 0.05)
          << where << " learnt little";  // 0.235 to between 0.305 and 0.415 here
      ++ran;
    }
  }
  if (ran == 0) GTEST_SKIP() << "needs two GPUs";
}

TEST(CudaRanksMerge, NcclAcrossRanksIsRefusedForMergesThatReadEveryReplica) {
  for (const std::string algo : {"adasum", "crossbow"}) {
    scheduler::SchedulerOptions scheduling = RanksScheduling(algo, 2, 1);
    scheduling.collective = merge::CollectiveKind::kNccl;
    EXPECT_FALSE(scheduler::MergesOnGpus(scheduling)) << algo;
    try {
      scheduler::ValidateSchedulerOptions(scheduling);
      ADD_FAILURE() << algo << " with nccl across ranks was accepted";
    } catch (const scheduler::OptionError& e) {
      EXPECT_NE(std::string(e.what()).find("across ranks"), std::string::npos) << e.what();
    }
    // The ring across ranks merges on the host mirrors, as before.
    scheduling.collective = merge::CollectiveKind::kPartitionedSum;
    EXPECT_FALSE(scheduler::MergesOnGpus(scheduling)) << algo;
  }
}

// Checkpoints across ranks whose global model lives on the GPUs (its host copy, made by every rank
// through NCCL, is what rank 0 writes): a run checkpointed after one epoch and resumed to two ends
// where the run that never stopped does, to the bit, on every rank.
TEST(CudaRanksMerge, ACheckpointedAndResumedRunEndsWhereTheWholeRunDoes) {
  XMLT_SKIP_WITHOUT_GPU();
  if (kernels::cuda::CudaDeviceCountOrZero() < 2) GTEST_SKIP() << "needs two GPUs";
  scheduler::SchedulerOptions scheduling = RanksScheduling("adaptive", 2, 1);
  scheduling.collective = merge::CollectiveKind::kNccl;
  scheduling.merge_rule.momentum = 0;
  scheduler::TrainOptions whole_run = xmlt::testing::ShortRunOptions(2), first_half = xmlt::testing::ShortRunOptions(1);
  const std::vector<Outcome> whole = TrainOnRanks(scheduling, 2, whole_run);
  xmlt::testing::TempDir dir;
  RunControl checkpointed;
  checkpointed.checkpoint_dir = dir.path();
  checkpointed.checkpoint_every = 1;
  const std::vector<Outcome> half = TrainOnRanks(scheduling, 2, first_half, checkpointed);
  RunControl resumed = checkpointed;
  resumed.resume_dir = dir.path();
  const std::vector<Outcome> rest = TrainOnRanks(scheduling, 2, whole_run, resumed);
  for (int r = 0; r < 2; ++r) {
    ASSERT_EQ(whole[size_t(r)].error, "") << "rank " << r;
    ASSERT_EQ(half[size_t(r)].error, "") << "rank " << r;
    ASSERT_EQ(rest[size_t(r)].error, "") << "rank " << r;
    EXPECT_EQ(rest[size_t(r)].model, whole[size_t(r)].model) << "rank " << r;
    EXPECT_EQ(rest[size_t(r)].model, rest[0].model) << "rank " << r;
  }
}

#ifdef XMLT_GPUSIM
// The last GPU of rank 1 lost (an illegal address at one of its launches, in the first mega-batch
// or a later one), with 1 and 2 GPUs a rank: every rank's run ends with an error that names the
// lost GPU's rank or device, the same on every rank, decided from the drops every rank sees
// before any collective (none waits for the other, which on a card would be forever).
TEST(CudaRanksMergeSim, AGpuLostOnOneRankStopsEveryRank) {
  XMLT_SKIP_WITHOUT_GPU();
  const int gpus = kernels::cuda::CudaDeviceCountOrZero();
  if (gpus < 2) GTEST_SKIP() << "needs two GPUs";
  for (const int per_rank : {1, 2}) {
    if (2 * per_rank > gpus) continue;
    scheduler::SchedulerOptions scheduling = RanksScheduling("adaptive", 2, per_rank);
    scheduling.collective = merge::CollectiveKind::kNccl;
    const int lost = 2 * per_rank - 1;
    const std::string lost_id = "cuda:" + std::to_string(lost) + "@r1";
    for (const uint64_t launch : {uint64_t(40), uint64_t(400)}) {
      const auto start = std::chrono::steady_clock::now();
      gpusim::InjectStickyErrorAtLaunch(launch, cudaErrorIllegalAddress, lost);
      const std::vector<Outcome> outcomes = TrainOnRanks(scheduling, 2, xmlt::testing::ShortRunOptions(2));
      gpusim::ClearInjectedFaults();
      for (int d = 0; d < gpus; ++d) {
        cudaSetDevice(d);
        cudaDeviceReset();
      }
      cudaSetDevice(0);
      cudaGetLastError();
      const std::string where = std::to_string(per_rank) + " GPUs a rank, GPU " + std::to_string(lost) +
                                " lost at launch " + std::to_string(launch);
      for (int r = 0; r < 2; ++r) {
        const std::string& error = outcomes[size_t(r)].error;
        EXPECT_NE(error, "") << where << ": rank " << r << " went on";
        EXPECT_EQ(error, outcomes[0].error) << where << ": rank " << r;
        EXPECT_TRUE(error.find("rank 1 has no GPU left") != std::string::npos ||
                    error.find(lost_id) != std::string::npos)
            << where << ": rank " << r << ": " << error;
      }
      std::cerr << where << ": " << outcomes[0].error << " ("
                << std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() << " s)\n";
    }
  }
}
#endif

}  // namespace
}  // namespace xmlt::run
