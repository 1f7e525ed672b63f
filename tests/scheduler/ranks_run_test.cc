// A run spread over several ranks (processes under MPI; here threads playing them, with the
// in-process rank groups) trains the same model as one process with all the devices: the same
// batch sizes, the same rows per device, the same evaluations. Every --algo but single.
#include <gtest/gtest.h>

#include <exception>
#include <thread>

#include "dist/rank_group.h"
#include "scheduler/multi_device_run.h"
#include "tests/scheduler/scheduler_test_support.h"

namespace xmlt::scheduler {
namespace {

const data::GeneratedData& Data() {
  static const data::GeneratedData data = testing::NormalizedData(3000, 300, 400, 40, 10, 5);
  return data;
}

TrainOptions Options() {
  TrainOptions options;
  options.epochs = 2;
  options.batch = 32;
  options.mega_batch = 8;
  options.hidden = {16};
  options.eval.kind = EvalSchedule::Kind::kEveryMegaBatches;
  options.eval.mega_batches = 2;
  return options;
}

struct Outcome {
  std::vector<EvalRecord> records;
  std::vector<float> model;
};

Outcome Train(const EngineOptions& engine) {
  const data::GeneratedData& data = Data();
  const TrainOptions options = Options();
  kernels::ModelShape shape{data.train.num_features(), options.hidden, data.train.num_labels()};
  kernels::Model<float> model = kernels::InitModel<float>(shape, options.seed);
  Outcome outcome;
  TrainCallbacks callbacks;
  callbacks.on_eval = [&](const EvalRecord& r) { outcome.records.push_back(r); };
  RunMultiDevice(data.train, &data.test, options, engine, &model, callbacks);
  outcome.model = model.params;
  return outcome;
}

// `ranks` threads, each a rank with `per_rank` CPU devices; every rank's outcome.
std::vector<Outcome> TrainOnRanks(EngineOptions engine, int ranks, const std::string& per_rank) {
  std::vector<std::unique_ptr<dist::RankGroup>> groups = dist::MakeThreadGroups(ranks);
  std::vector<Outcome> outcomes(ranks);
  std::vector<std::exception_ptr> errors(ranks);
  std::vector<std::thread> threads;
  for (int r = 0; r < ranks; ++r) {
    threads.emplace_back([&, r] {
      try {
        EngineOptions mine = engine;
        mine.devices = engine::DevicesOfRanks(engine::ParseDeviceList(per_rank), ranks, &mine.device_rank);
        mine.ranks = groups[r].get();
        outcomes[r] = Train(mine);
      } catch (...) {
        errors[r] = std::current_exception();
      }
    });
  }
  for (std::thread& t : threads) t.join();
  for (const std::exception_ptr& e : errors)
    if (e) std::rethrow_exception(e);
  return outcomes;
}

void ExpectSameRun(const Outcome& one, const Outcome& spread, const std::string& what) {
  ASSERT_EQ(one.records.size(), spread.records.size()) << what;
  for (size_t e = 0; e < one.records.size(); ++e) {
    const EvalRecord &a = one.records[e], &b = spread.records[e];
    EXPECT_EQ(a.train_samples, b.train_samples) << what << ", evaluation " << e;
    EXPECT_NEAR(a.test.metrics.p1, b.test.metrics.p1, 0.005) << what << ", evaluation " << e;
    ASSERT_EQ(a.devices.size(), b.devices.size()) << what;
    for (size_t d = 0; d < a.devices.size(); ++d) {
      EXPECT_EQ(a.devices[d].batch, b.devices[d].batch) << what << ", evaluation " << e << ", device " << d;
      EXPECT_EQ(a.devices[d].rows, b.devices[d].rows) << what << ", evaluation " << e << ", device " << d;
      EXPECT_EQ(a.devices[d].updates, b.devices[d].updates) << what << ", evaluation " << e << ", device " << d;
    }
  }
}

TEST(RanksRun, TwoRanksOfTwoDevicesTrainTheRunOfFourDevicesForEveryAlgo) {
  for (const char* algo : {"adaptive", "elastic", "adasum", "sync", "crossbow"}) {
    const EngineOptions engine = testing::WithAlgo(testing::VirtualClockEngine("cpu:4", "1,1.1,1.2,1.32"), algo);
    const Outcome one = Train(engine);
    const std::vector<Outcome> spread = TrainOnRanks(engine, 2, "cpu:2");
    for (size_t r = 0; r < spread.size(); ++r) {
      ExpectSameRun(one, spread[r], std::string(algo) + " on rank " + std::to_string(r));
      // Every rank holds the same global model as the one process, bit for bit: the same batches on
      // the same devices, and each merge over the same replicas in the same order.
      EXPECT_EQ(spread[r].model, one.model) << algo << " on rank " << r;
    }
    EXPECT_GT(one.records.back().test.metrics.p1, 0.05) << algo << " learnt nothing";
  }
}

// Three ranks of one device each against one process with three: a rank count that divides
// nothing evenly.
TEST(RanksRun, ThreeRanksOfOneDeviceTrainTheRunOfThreeDevices) {
  const EngineOptions engine = testing::VirtualClockEngine("cpu:3", "1,1.2,1.5");
  const Outcome one = Train(engine);
  const std::vector<Outcome> spread = TrainOnRanks(engine, 3, "cpu:1");
  for (size_t r = 0; r < spread.size(); ++r) ExpectSameRun(one, spread[r], "rank " + std::to_string(r));
}

}  // namespace
}  // namespace xmlt::scheduler
