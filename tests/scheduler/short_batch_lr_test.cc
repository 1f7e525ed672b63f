// A batch cut short (the epoch's or the run's last) steps at its share of the device's rate, as
// Algorithm 1 scales a smaller batch's rate: at the full rate, Bibtex's epoch-end batch of 16 rows
// (of 128) set one device's P@1 back by up to 0.09 at every epoch's end.
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "kernels/model.h"
#include "scheduler/device_pool.h"
#include "tests/scheduler/scheduler_test_support.h"

namespace xmlt::scheduler {
namespace {

struct OneDevicePool {
  data::GeneratedData data = testing::NormalizedData(100, 10, 50, 8, 4, 3);
  TrainOptions options = testing::ShortRunOptions(1);
  SchedulerOptions scheduling = testing::VirtualClockScheduling("cpu:1", "");
  kernels::Model<float> initial;
  DevicePool pool;
  OneDevicePool()
      : initial(kernels::InitModel<float>(
            kernels::ModelShape{data.train.num_features(), options.hidden, data.train.num_labels()}, 1)),
        pool(data.train, options, scheduling, initial, {}) {}
};

TEST(ShortBatchLr, AWholeBatchStepsAtTheDevicesRate) {
  OneDevicePool p;
  size_t used = 0;
  uint64_t cap = 1000;
  const Assignment a = p.pool.Assign(0, 32, &used, &cap);
  ASSERT_EQ(a.count, 32u);
  EXPECT_FLOAT_EQ(p.pool.TaskFor(a, 0).lr, float(p.pool.states()[0].lr));
}

TEST(ShortBatchLr, ABatchCutByTheRunsEndStepsAtItsShare) {
  OneDevicePool p;
  size_t used = 0;
  uint64_t cap = 8;  // eight rows left of the run
  const Assignment a = p.pool.Assign(0, 32, &used, &cap);
  ASSERT_EQ(a.count, 8u);
  EXPECT_FLOAT_EQ(p.pool.TaskFor(a, 0).lr, float(p.pool.states()[0].lr * 8 / 32));
}

TEST(ShortBatchLr, TheEpochsLastBatchStepsAtItsShareWithTheSchedulesFactor) {
  OneDevicePool p;  // 100 rows, batches of 32: the epoch's fourth batch holds 4
  p.pool.SetLrScale(0.5);
  size_t used = 0;
  uint64_t cap = 1000;
  std::vector<size_t> counts;
  std::vector<float> lrs;
  for (int i = 0; i < 4; ++i) {
    const Assignment a = p.pool.Assign(0, 32, &used, &cap);
    counts.push_back(a.count);
    lrs.push_back(p.pool.TaskFor(a, i).lr);
  }
  EXPECT_EQ(counts, (std::vector<size_t>{32, 32, 32, 4}));
  const double rate = p.pool.states()[0].lr * 0.5;
  EXPECT_FLOAT_EQ(lrs[0], float(rate));
  EXPECT_FLOAT_EQ(lrs[3], float(rate * 4 / 32));
}

}  // namespace
}  // namespace xmlt::scheduler
