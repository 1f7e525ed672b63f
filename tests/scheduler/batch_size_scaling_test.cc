// Tests of Algorithm 1 (batch size scaling): every expected number is worked out by hand from the
// paper's pseudo-code in the comment beside it, plus the defaults of MakeBounds and RowsForBatch.
#include "scheduler/batch_size_scaling.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <vector>

namespace xmlt::scheduler {
namespace {

// b_max = 512 -> b_min = 64, beta = 32 (the paper's defaults), used by most cases below.
BatchScalingBounds PaperBounds() { return MakeBounds(512); }

std::vector<BatchSizeAndLr> Devices(const std::vector<double>& batches, double lr) {
  std::vector<BatchSizeAndLr> devices;
  for (double b : batches) devices.push_back({b, lr});
  return devices;
}

TEST(MakeBoundsTest, PaperDefaults) {
  const BatchScalingBounds b = MakeBounds(512);
  EXPECT_DOUBLE_EQ(b.b_max, 512);
  EXPECT_DOUBLE_EQ(b.b_min, 64);  // 512 / 8
  EXPECT_DOUBLE_EQ(b.beta, 32);   // 64 / 2
}

TEST(MakeBoundsTest, DefaultsForNonPositiveArguments) {
  const BatchScalingBounds b = MakeBounds(1000, 0, -1);
  EXPECT_DOUBLE_EQ(b.b_min, 125);  // 1000 / 8
  EXPECT_DOUBLE_EQ(b.beta, 62.5);  // 125 / 2
  const BatchScalingBounds c = MakeBounds(1000, -5, 0);
  EXPECT_DOUBLE_EQ(c.b_min, 125);
  EXPECT_DOUBLE_EQ(c.beta, 62.5);
}

TEST(MakeBoundsTest, ExplicitValuesKept) {
  const BatchScalingBounds b = MakeBounds(256, 100, 7);
  EXPECT_DOUBLE_EQ(b.b_max, 256);
  EXPECT_DOUBLE_EQ(b.b_min, 100);
  EXPECT_DOUBLE_EQ(b.beta, 7);
  // beta defaults to half of the explicit b_min, not of b_max / 8.
  EXPECT_DOUBLE_EQ(MakeBounds(256, 100).beta, 50);
  // b_min == b_max is allowed: the batch then never changes.
  EXPECT_DOUBLE_EQ(MakeBounds(256, 256).b_min, 256);
}

TEST(MakeBoundsTest, FractionalDefaults) {
  const BatchScalingBounds b = MakeBounds(100);
  EXPECT_DOUBLE_EQ(b.b_min, 12.5);
  EXPECT_DOUBLE_EQ(b.beta, 6.25);
}

TEST(MakeBoundsTest, Errors) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double inf = std::numeric_limits<double>::infinity();
  EXPECT_THROW(MakeBounds(0), std::invalid_argument);
  EXPECT_THROW(MakeBounds(-8), std::invalid_argument);
  EXPECT_THROW(MakeBounds(nan), std::invalid_argument);
  EXPECT_THROW(MakeBounds(inf), std::invalid_argument);
  EXPECT_THROW(MakeBounds(512, 513), std::invalid_argument);  // b_min > b_max
  EXPECT_THROW(MakeBounds(512, nan), std::invalid_argument);
  EXPECT_THROW(MakeBounds(512, 64, nan), std::invalid_argument);
  EXPECT_THROW(MakeBounds(512, 64, inf), std::invalid_argument);
}

TEST(ScaleBatchSizesTest, EqualUpdatesChangeNothing) {
  std::vector<BatchSizeAndLr> d = {{512, 0.4}, {256, 0.2}, {300, 0.3}};
  ScaleBatchSizes({10, 10, 10}, PaperBounds(), &d);  // u_i == mean: neither branch
  EXPECT_EQ(d[0].batch, 512);
  EXPECT_EQ(d[0].lr, 0.4);
  EXPECT_EQ(d[1].batch, 256);
  EXPECT_EQ(d[1].lr, 0.2);
  EXPECT_EQ(d[2].batch, 300);
  EXPECT_EQ(d[2].lr, 0.3);
}

TEST(ScaleBatchSizesTest, AllZeroUpdatesChangeNothing) {
  std::vector<BatchSizeAndLr> d = Devices({200, 100}, 0.1);
  ScaleBatchSizes({0, 0}, PaperBounds(), &d);
  EXPECT_EQ(d[0].batch, 200);
  EXPECT_EQ(d[1].batch, 100);
}

TEST(ScaleBatchSizesTest, OneFastOneSlow) {
  // mean = (12 + 8) / 2 = 10.
  // fast: 256 + 32 * (12 - 10) = 320 <= 512 -> b = 320, lr = 0.1 * 320 / 256 = 0.125
  // slow: 256 - 32 * (10 - 8)  = 192 >= 64  -> b = 192, lr = 0.1 * 192 / 256 = 0.075
  std::vector<BatchSizeAndLr> d = Devices({256, 256}, 0.1);
  ScaleBatchSizes({12, 8}, PaperBounds(), &d);
  EXPECT_DOUBLE_EQ(d[0].batch, 320);
  EXPECT_DOUBLE_EQ(d[0].lr, 0.125);
  EXPECT_DOUBLE_EQ(d[1].batch, 192);
  EXPECT_DOUBLE_EQ(d[1].lr, 0.075);
}

TEST(ScaleBatchSizesTest, DeviceOrderDoesNotMatter) {
  // Same as OneFastOneSlow with the devices swapped.
  std::vector<BatchSizeAndLr> d = Devices({256, 256}, 0.1);
  ScaleBatchSizes({8, 12}, PaperBounds(), &d);
  EXPECT_DOUBLE_EQ(d[0].batch, 192);
  EXPECT_DOUBLE_EQ(d[0].lr, 0.075);
  EXPECT_DOUBLE_EQ(d[1].batch, 320);
  EXPECT_DOUBLE_EQ(d[1].lr, 0.125);
}

TEST(ScaleBatchSizesTest, StepAboveBMaxIsSkippedNotClamped) {
  // mean = 10. fast: 500 + 32 * 2 = 564 > 512 -> unchanged (a clamp would give 512).
  // slow: 500 - 32 * 2 = 436 >= 64 -> b = 436, lr = 0.2 * 436 / 500 = 0.1744.
  std::vector<BatchSizeAndLr> d = Devices({500, 500}, 0.2);
  ScaleBatchSizes({12, 8}, PaperBounds(), &d);
  EXPECT_EQ(d[0].batch, 500);
  EXPECT_EQ(d[0].lr, 0.2);
  EXPECT_DOUBLE_EQ(d[1].batch, 436);
  EXPECT_DOUBLE_EQ(d[1].lr, 0.1744);
}

TEST(ScaleBatchSizesTest, StepBelowBMinIsSkippedNotClamped) {
  // mean = 10. fast: 300 + 64 = 364 -> lr = 0.3 * 364 / 300 = 0.364.
  // slow: 100 - 64 = 36 < 64 -> unchanged (a clamp would give 64).
  std::vector<BatchSizeAndLr> d = Devices({300, 100}, 0.3);
  ScaleBatchSizes({12, 8}, PaperBounds(), &d);
  EXPECT_DOUBLE_EQ(d[0].batch, 364);
  EXPECT_DOUBLE_EQ(d[0].lr, 0.364);
  EXPECT_EQ(d[1].batch, 100);
  EXPECT_EQ(d[1].lr, 0.3);
}

TEST(ScaleBatchSizesTest, LandingExactlyOnABoundIsAllowed) {
  // mean = 10. 448 + 64 = 512 <= 512 and 128 - 64 = 64 >= 64: both applied.
  // lr: 0.1 * 512 / 448 = 0.8 / 7; 0.1 * 64 / 128 = 0.05.
  std::vector<BatchSizeAndLr> d = Devices({448, 128}, 0.1);
  ScaleBatchSizes({12, 8}, PaperBounds(), &d);
  EXPECT_DOUBLE_EQ(d[0].batch, 512);
  EXPECT_DOUBLE_EQ(d[0].lr, 0.8 / 7);
  EXPECT_DOUBLE_EQ(d[1].batch, 64);
  EXPECT_DOUBLE_EQ(d[1].lr, 0.05);
}

TEST(ScaleBatchSizesTest, AtBMaxTheFastestStays) {
  // Everyone starts at b_max, as in the paper: faster devices cannot grow, slower ones shrink.
  // u = {14, 12, 10}: mean = 12. d0: 512 + 64 > 512 -> unchanged. d1: u == mean -> unchanged.
  // d2: 512 - 64 = 448, lr = 0.5 * 448 / 512 = 0.4375.
  std::vector<BatchSizeAndLr> d = Devices({512, 512, 512}, 0.5);
  ScaleBatchSizes({14, 12, 10}, PaperBounds(), &d);
  EXPECT_EQ(d[0].batch, 512);
  EXPECT_EQ(d[0].lr, 0.5);
  EXPECT_EQ(d[1].batch, 512);
  EXPECT_EQ(d[1].lr, 0.5);
  EXPECT_DOUBLE_EQ(d[2].batch, 448);
  EXPECT_DOUBLE_EQ(d[2].lr, 0.4375);
}

TEST(ScaleBatchSizesTest, FractionalMeanGivesFractionalSizes) {
  // u = {3, 1, 1}: mean = 5/3.
  // d0: 256 + 32 * (3 - 5/3) = 256 + 128/3 = 896/3; lr = 0.1 * (896/3) / 256 = 0.35/3
  // d1, d2: 256 - 32 * (5/3 - 1) = 256 - 64/3 = 704/3; lr = 0.1 * (704/3) / 256 = 0.275/3
  std::vector<BatchSizeAndLr> d = Devices({256, 256, 256}, 0.1);
  ScaleBatchSizes({3, 1, 1}, PaperBounds(), &d);
  EXPECT_DOUBLE_EQ(d[0].batch, 896.0 / 3);
  EXPECT_DOUBLE_EQ(d[0].lr, 0.35 / 3);
  EXPECT_DOUBLE_EQ(d[1].batch, 704.0 / 3);
  EXPECT_DOUBLE_EQ(d[1].lr, 0.275 / 3);
  EXPECT_DOUBLE_EQ(d[2].batch, 704.0 / 3);
  EXPECT_DOUBLE_EQ(d[2].lr, 0.275 / 3);

  // The fractional state carries over: u = {1, 3, 2}, mean = 2.
  // d0: 896/3 - 32 = 800/3; d1: 704/3 + 32 = 800/3; d2 unchanged.
  // lr_0 = (0.35/3) * (800/3) / (896/3) = 0.3125 / 3; lr_1 = (0.275/3) * (800/3) / (704/3) =
  // 0.3125/3
  ScaleBatchSizes({1, 3, 2}, PaperBounds(), &d);
  EXPECT_DOUBLE_EQ(d[0].batch, 800.0 / 3);
  EXPECT_DOUBLE_EQ(d[0].lr, 0.3125 / 3);
  EXPECT_DOUBLE_EQ(d[1].batch, 800.0 / 3);
  EXPECT_DOUBLE_EQ(d[1].lr, 0.3125 / 3);
  EXPECT_DOUBLE_EQ(d[2].batch, 704.0 / 3);
  EXPECT_DOUBLE_EQ(d[2].lr, 0.275 / 3);
}

TEST(ScaleBatchSizesTest, CustomBeta) {
  // b_max = 100, b_min = 10, beta = 0.5; u = {40, 0}: mean = 20.
  // d0: 50 + 0.5 * 20 = 60; lr = 1 * 60 / 50 = 1.2. d1: 50 - 10 = 40; lr = 0.8.
  std::vector<BatchSizeAndLr> d = Devices({50, 50}, 1.0);
  ScaleBatchSizes({40, 0}, MakeBounds(100, 10, 0.5), &d);
  EXPECT_DOUBLE_EQ(d[0].batch, 60);
  EXPECT_DOUBLE_EQ(d[0].lr, 1.2);
  EXPECT_DOUBLE_EQ(d[1].batch, 40);
  EXPECT_DOUBLE_EQ(d[1].lr, 0.8);
}

TEST(ScaleBatchSizesTest, SingleDeviceNeverChanges) {
  std::vector<BatchSizeAndLr> d = Devices({128}, 0.1);
  ScaleBatchSizes({37}, PaperBounds(), &d);  // u == mean always
  EXPECT_EQ(d[0].batch, 128);
  EXPECT_EQ(d[0].lr, 0.1);
}

TEST(ScaleBatchSizesTest, EmptyIsANoOp) {
  std::vector<BatchSizeAndLr> d;
  ScaleBatchSizes({}, PaperBounds(), &d);
  EXPECT_TRUE(d.empty());
}

TEST(ScaleBatchSizesTest, LinearScalingKeepsLrOverBatchConstant) {
  // Whatever the updates, every applied step multiplies lr_i by new/old batch, so lr_i / b_i is
  // the same after any number of applications as before the first.
  std::vector<BatchSizeAndLr> d = {{512, 0.8}, {400, 0.5}, {256, 0.25}, {100, 0.3}};
  std::vector<double> ratio;
  for (const BatchSizeAndLr& x : d) ratio.push_back(x.lr / x.batch);
  const std::vector<std::vector<uint64_t>> rounds = {{10, 9, 8, 7}, {3, 9, 1, 4},  {20, 0, 0, 5},
                                                     {6, 6, 7, 6},  {1, 2, 3, 50}, {9, 9, 9, 9}};
  for (const auto& u : rounds) {
    ScaleBatchSizes(u, PaperBounds(), &d);
    for (size_t i = 0; i < d.size(); ++i) {
      EXPECT_NEAR(d[i].lr / d[i].batch, ratio[i], 1e-12 * ratio[i]) << "device " << i;
    }
  }
}

TEST(ScaleBatchSizesTest, StaysWithinBoundsWhenStartedWithin) {
  const BatchScalingBounds bounds = PaperBounds();
  std::vector<BatchSizeAndLr> d = Devices({512, 64, 300, 100}, 0.1);
  const std::vector<std::vector<uint64_t>> rounds = {{100, 0, 0, 0}, {0, 100, 0, 0}, {1, 2, 3, 4},
                                                     {4, 3, 2, 1},   {50, 50, 0, 0}, {0, 0, 9, 99}};
  for (const auto& u : rounds) {
    ScaleBatchSizes(u, bounds, &d);
    for (const BatchSizeAndLr& x : d) {
      EXPECT_GE(x.batch, bounds.b_min);
      EXPECT_LE(x.batch, bounds.b_max);
    }
  }
}

// A throughput model of a mega-batch under dynamic scheduling: device i processes a share of the
// rows proportional to its speed, whatever its batch size, so it performs u_i = rows_i / b_i
// updates (rounded half up). Equal updates need b_i proportional to the speed.
std::vector<uint64_t> SimulatedUpdates(double rows, const std::vector<double>& speed,
                                       const std::vector<BatchSizeAndLr>& d) {
  double total = 0;
  for (double s : speed) total += s;
  std::vector<uint64_t> u;
  for (size_t i = 0; i < d.size(); ++i) {
    u.push_back(static_cast<uint64_t>(std::floor(rows * speed[i] / total / d[i].batch + 0.5)));
  }
  return u;
}

uint64_t Spread(const std::vector<uint64_t>& u) {
  uint64_t lo = u[0], hi = u[0];
  for (uint64_t x : u) {
    lo = std::min(lo, x);
    hi = std::max(hi, x);
  }
  return hi - lo;
}

TEST(ScaleBatchSizesTest, RepeatedApplicationEqualizesUpdates) {
  // Four devices with speeds 1 : 0.9 : 0.8 : 0.7, all starting at b_max = 512, 25600 rows per
  // mega-batch: first u = {15, 13, 12, 10} (15.06, 13.55, 12.05, 10.54 rounded).
  const BatchScalingBounds bounds = PaperBounds();
  const std::vector<double> speed = {1, 0.9, 0.8, 0.7};
  std::vector<BatchSizeAndLr> d = Devices({512, 512, 512, 512}, 0.1);
  const std::vector<uint64_t> first = SimulatedUpdates(25600, speed, d);
  EXPECT_EQ(first, (std::vector<uint64_t>{15, 13, 12, 10}));

  // The first round by hand: mean = 12.5; d0 would go to 512 + 80 > 512 (skipped); d1 to 528
  // (skipped); d2 -> 512 - 16 = 496; d3 -> 512 - 80 = 432.
  ScaleBatchSizes(first, bounds, &d);
  EXPECT_EQ(d[0].batch, 512);
  EXPECT_EQ(d[1].batch, 512);
  EXPECT_DOUBLE_EQ(d[2].batch, 496);
  EXPECT_DOUBLE_EQ(d[3].batch, 432);

  std::vector<uint64_t> u;
  for (int round = 0; round < 40; ++round) {
    u = SimulatedUpdates(25600, speed, d);
    ScaleBatchSizes(u, bounds, &d);
  }
  EXPECT_EQ(Spread(u), 0u) << "updates did not equalize";
  // Faster devices end with larger batches, roughly proportional to their speed.
  for (size_t i = 1; i < d.size(); ++i) EXPECT_LT(d[i].batch, d[i - 1].batch);
  for (size_t i = 0; i < d.size(); ++i) {
    EXPECT_NEAR(d[i].batch / d[0].batch, speed[i], 0.05) << "device " << i;
    EXPECT_NEAR(d[i].lr / d[i].batch, 0.1 / 512, 1e-15);
  }
}

TEST(ScaleBatchSizesTest, RepeatedApplicationHalfSpeedDevice) {
  // Two devices, the second half as fast; 12800 rows per mega-batch: first u = {17, 8}
  // (16.67, 8.33). Rounds by hand: mean 12.5 -> d1 = 512 - 144 = 368; then u = {17, 12}
  // (11.59 -> 12), mean 14.5 -> d1 = 368 - 80 = 288; u = {17, 15} (14.8 -> 15), mean 16 ->
  // d1 = 288 - 32 = 256; then u = {17, 17} and nothing changes any more.
  std::vector<BatchSizeAndLr> d = Devices({512, 512}, 0.2);
  const std::vector<double> speed = {1, 0.5};
  const std::vector<double> expected_b1 = {368, 288, 256, 256, 256};
  for (double b1 : expected_b1) {
    ScaleBatchSizes(SimulatedUpdates(12800, speed, d), PaperBounds(), &d);
    EXPECT_EQ(d[0].batch, 512);
    EXPECT_DOUBLE_EQ(d[1].batch, b1);
  }
  EXPECT_DOUBLE_EQ(d[1].lr, 0.1);  // 0.2 * 256 / 512
  EXPECT_EQ(SimulatedUpdates(12800, speed, d), (std::vector<uint64_t>{17, 17}));
}

TEST(ScaleBatchSizesTest, Errors) {
  std::vector<BatchSizeAndLr> d = Devices({256, 256}, 0.1);
  EXPECT_THROW(ScaleBatchSizes({1, 2, 3}, PaperBounds(), &d), std::invalid_argument);
  EXPECT_THROW(ScaleBatchSizes({1}, PaperBounds(), &d), std::invalid_argument);
  EXPECT_THROW(ScaleBatchSizes({1, 2}, PaperBounds(), nullptr), std::invalid_argument);
  std::vector<BatchSizeAndLr> zero = Devices({256, 0}, 0.1);
  EXPECT_THROW(ScaleBatchSizes({1, 2}, PaperBounds(), &zero), std::invalid_argument);
}

TEST(RowsForBatchTest, RoundsHalfUp) {
  EXPECT_EQ(RowsForBatch(256), 256u);
  EXPECT_EQ(RowsForBatch(298.6666666666667), 299u);
  EXPECT_EQ(RowsForBatch(234.66666666666666), 235u);
  EXPECT_EQ(RowsForBatch(234.33), 234u);
  EXPECT_EQ(RowsForBatch(2.5), 3u);
  EXPECT_EQ(RowsForBatch(3.5), 4u);  // halves up, not to even
  EXPECT_EQ(RowsForBatch(100.5), 101u);
  EXPECT_EQ(RowsForBatch(100.49999999999999), 100u);
  EXPECT_EQ(RowsForBatch(1.5), 2u);
}

TEST(RowsForBatchTest, AtLeastOne) {
  EXPECT_EQ(RowsForBatch(1), 1u);
  EXPECT_EQ(RowsForBatch(0.6), 1u);
  EXPECT_EQ(RowsForBatch(0.4), 1u);
  EXPECT_EQ(RowsForBatch(0), 1u);
  EXPECT_EQ(RowsForBatch(-3), 1u);
  EXPECT_EQ(RowsForBatch(std::numeric_limits<double>::quiet_NaN()), 1u);
}

TEST(RowsForBatchTest, SaturatesAtUint32Max) {
  EXPECT_EQ(RowsForBatch(1e12), std::numeric_limits<uint32_t>::max());
  EXPECT_EQ(RowsForBatch(std::numeric_limits<double>::infinity()),
            std::numeric_limits<uint32_t>::max());
}

}  // namespace
}  // namespace xmlt::scheduler
