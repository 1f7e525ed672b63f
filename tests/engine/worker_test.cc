// Device manager threads: results come back through the shared queue, one per batch and in each
// worker's order, and a device's exception travels back to the coordinator instead of escaping.
#include "engine/worker.h"

#include <gtest/gtest.h>

#include <stdexcept>

#include "kernels/context_lost.h"

namespace xmlt::engine {
namespace {

// A device that records what it was asked and fails on request.
class FakeDevice final : public Device {
 public:
  explicit FakeDevice(std::vector<size_t>* seen) : seen_(seen) { spec_.id = "cpu:7"; }
  const DeviceSpec& spec() const override { return spec_; }
  kernels::cpu::LossResult TrainBatch(const data::Dataset&, const uint64_t* rows, size_t count,
                                      float lr) override {
    if (lr < 0) throw std::runtime_error("device failure on purpose");
    seen_->push_back(count);
    return {double(rows[0]), uint32_t(count)};
  }
  float* HostParams() override { return nullptr; }
  size_t NumParams() const override { return 0; }
  size_t OptimizerStateSize() const override { return 0; }
  void StreamOptimizerState(const OptimizerStateSink&) override {}
  void RestoreOptimizerState(const void*, size_t) override {}

 private:
  DeviceSpec spec_;
  std::vector<size_t>* seen_;
};

// Three batches of `rows` with ids first, first + 1, first + 2, the middle one injected with
// `inject` (a BatchTask flag); their results in order.
std::vector<BatchResult> HealthyInjectedHealthy(Worker& worker, ResultQueue& results, const uint64_t* rows,
                                                size_t count, uint64_t first, bool BatchTask::*inject) {
  BatchTask task;
  task.rows = rows;
  task.count = count;
  task.lr = 0.1f;
  for (uint64_t k = 0; k < 3; ++k) {
    task.id = first + k;
    task.*inject = k == 1;  // after the failure, a healthy-looking batch
    worker.Submit(task);
  }
  std::vector<BatchResult> got(3);
  for (BatchResult& r : got) results.pop(r);
  return got;
}

TEST(Worker, RunsBatchesInOrderAndCarriesErrorsBack) {
  data::Dataset dataset;
  ResultQueue results;
  std::vector<size_t> seen;
  const uint64_t rows[3] = {11, 22, 33};
  {
    Worker worker(3, std::make_unique<FakeDevice>(&seen), &dataset, &results);
    BatchTask task;
    task.rows = rows;
    task.lr = 0.1f;
    for (size_t count : {1, 2, 3}) {
      task.count = count;
      task.slowdown = 2;
      worker.Submit(task);
    }
    task.lr = -1;  // the fake device throws
    worker.Submit(task);
    for (size_t k = 0; k < 4; ++k) {
      BatchResult result;
      results.pop(result);
      EXPECT_EQ(result.device, 3u);
      if (k < 3) {
        EXPECT_FALSE(result.error);
        EXPECT_EQ(result.count, k + 1);
        EXPECT_DOUBLE_EQ(result.loss_sum, 11.0);
        EXPECT_DOUBLE_EQ(result.busy_s, 2 * result.compute_s);
      } else {
        ASSERT_TRUE(result.error);
        EXPECT_THROW(std::rethrow_exception(result.error), std::runtime_error);
      }
    }
  }  // the destructor stops and joins the thread
  EXPECT_EQ(seen, (std::vector<size_t>{1, 2, 3}));
}

TEST(Worker, AFailedDeviceTakesNoMoreWorkAndInjectedFaultsFailWithoutTraining) {
  data::Dataset dataset;
  ResultQueue results;
  std::vector<size_t> seen;
  const uint64_t rows[2] = {5, 6};
  {
    Worker worker(1, std::make_unique<FakeDevice>(&seen), &dataset, &results);
    const std::vector<BatchResult> got =
        HealthyInjectedHealthy(worker, results, rows, 2, 40, &BatchTask::inject_fault);
    EXPECT_EQ(got[0].id, 40u);
    EXPECT_FALSE(got[0].error);
    EXPECT_EQ(got[1].id, 41u);
    ASSERT_TRUE(got[1].error);
    EXPECT_EQ(got[2].id, 42u);
    ASSERT_TRUE(got[2].error);
    try {
      std::rethrow_exception(got[2].error);
    } catch (const std::runtime_error& e) {
      EXPECT_NE(std::string(e.what()).find("injected fault"), std::string::npos) << e.what();
    }
  }
  EXPECT_EQ(seen, (std::vector<size_t>{2}));  // only the first batch reached the device
}

TEST(Worker, ALostContextIsMarkedOnEveryResultAfterIt) {
  data::Dataset dataset;
  ResultQueue results;
  std::vector<size_t> seen;
  const uint64_t rows[1] = {5};
  {
    Worker worker(2, std::make_unique<FakeDevice>(&seen), &dataset, &results);
    const std::vector<BatchResult> got = HealthyInjectedHealthy(worker, results, rows, 1, 0, &BatchTask::inject_lost);
    EXPECT_FALSE(got[0].error);
    EXPECT_FALSE(got[0].context_lost);
    for (size_t k : {size_t{1}, size_t{2}}) {
      ASSERT_TRUE(got[k].error) << k;
      EXPECT_TRUE(got[k].context_lost) << k;
      EXPECT_THROW(std::rethrow_exception(got[k].error), kernels::ContextLost) << k;
    }
  }
  EXPECT_EQ(seen, (std::vector<size_t>{1}));
  // An ordinary error is not a lost context.
  {
    Worker worker(0, std::make_unique<FakeDevice>(&seen), &dataset, &results);
    BatchTask task;
    task.rows = rows;
    task.count = 1;
    task.lr = -1;
    worker.Submit(task);
    BatchResult r;
    results.pop(r);
    ASSERT_TRUE(r.error);
    EXPECT_FALSE(r.context_lost);
  }
}

}  // namespace
}  // namespace xmlt::engine
