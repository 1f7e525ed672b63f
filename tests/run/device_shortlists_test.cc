// The ranker's shortlists on the run's devices (run/device_shortlists.h): on CPU devices they are
// the host's lists whatever the device count; on simulated GPUs, and on GPUs mixed with CPUs, each
// row's list is its best labels by the host's logits within the products' rounding; a stop leaves
// the rest unscored.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <string>
#include <vector>

#include "data/sparse_batch.h"
#include "engine/device_query.h"
#include "engine/device_spec.h"
#include "engine/evaluator.h"
#include "kernels/cpu/sparse_mlp.h"
#include "run/device_shortlists.h"
#include "tests/run/ranker_test_rows.h"

namespace xmlt::run {
namespace {

constexpr uint32_t kLabels = 300;

struct ShortlistCase {
  data::Dataset rows = SeparableRows(203, kLabels, 4);  // not a multiple of any device count here
  kernels::Model<float> mlp = UntrainedMlp(2 * kLabels, kLabels);
};

ShortlistDevices On(const char* list, kernels::OutputMath math = kernels::OutputMath::kFp32) {
  return {engine::ParseDeviceList(list), math};
}

int GpusNeeded(const ShortlistDevices& where) {
  int needed = 0;
  for (const engine::DeviceSpec& d : where.devices)
    if (d.kind == engine::DeviceKind::kCuda) needed = std::max(needed, d.ordinal + 1);
  return needed;
}

// Row r's logits on the host, in double from the float activations.
std::vector<double> HostLogits(const ShortlistCase& s, uint64_t r) {
  data::SparseBatch batch;
  data::GatherBatch(s.rows, &r, 1, &batch);
  std::vector<std::vector<float>> activations;
  kernels::cpu::HiddenActivations(s.mlp, batch, &activations);
  const size_t last = s.mlp.shape.num_layers() - 1;
  const uint64_t inputs = s.mlp.shape.LayerInputs(last);
  std::vector<double> z(kLabels);
  for (uint64_t j = 0; j < kLabels; ++j) {
    double sum = s.mlp.Bias(last)[j];
    for (uint64_t i = 0; i < inputs; ++i) sum += double(activations.back()[i]) * s.mlp.Weight(last)[j * inputs + i];
    z[j] = sum;
  }
  return z;
}

void ExpectBestWithinRounding(const ShortlistCase& s, const std::vector<uint32_t>& top, uint32_t k, double tolerance) {
  ASSERT_EQ(top.size(), s.rows.num_rows() * k);
  for (uint64_t r = 0; r < s.rows.num_rows(); ++r) {
    std::vector<double> z = HostLogits(s, r);
    std::vector<double> sorted = z;
    std::sort(sorted.begin(), sorted.end(), std::greater<double>());
    for (uint32_t i = 0; i < k; ++i) {
      const uint32_t label = top[r * k + i];
      ASSERT_LT(label, kLabels) << "row " << r;
      EXPECT_GE(z[label], sorted[i] - tolerance) << "row " << r << " place " << i;
    }
  }
}

TEST(DeviceShortlists, CpuDevicesGiveTheHostsListsWhateverTheirCount) {
  ShortlistCase s;
  const std::vector<uint32_t> host = engine::TopLabels(s.mlp, s.rows, 50);
  EXPECT_EQ(ShortlistsOnDevices({}, s.mlp, s.rows, 50), host);
  EXPECT_EQ(ShortlistsOnDevices(On("cpu:1"), s.mlp, s.rows, 50), host);
  EXPECT_EQ(ShortlistsOnDevices(On("cpu:4"), s.mlp, s.rows, 50), host);
  ExpectBestWithinRounding(s, host, 50, 1e-5);
}

TEST(DeviceShortlists, GpusScoreTheirSharesAsTheHostWouldWithinRounding) {
  ShortlistCase s;
  for (const char* list : {"cuda:0", "cuda:0,cuda:1,cpu:1", "cuda:0x2,cpu:2"}) {
    SCOPED_TRACE(list);
    const ShortlistDevices where = On(list);
    if (engine::CudaDeviceCount() < GpusNeeded(where))
      GTEST_SKIP() << "needs " << GpusNeeded(where) << " GPUs (a CUDA or -DXMLT_CUDA=SIM build)";
    for (uint32_t k : {5u, 50u}) ExpectBestWithinRounding(s, ShortlistsOnDevices(where, s.mlp, s.rows, k), k, 1e-4);
  }
}

TEST(DeviceShortlists, AStopLeavesTheRestUnscored) {
  ShortlistCase s;
  const std::vector<uint32_t> host = engine::TopLabels(s.mlp, s.rows, 5);
  // Asked before each device's share and each chunk of rows: the first share (101 rows, one
  // chunk) is scored, then the stop comes before the second.
  std::atomic<int> asked{0};
  const std::vector<uint32_t> top = ShortlistsOnDevices(On("cpu:2"), s.mlp, s.rows, 5, [&] { return ++asked > 2; });
  const size_t first_share = 101 * 5;
  EXPECT_TRUE(std::equal(top.begin(), top.begin() + first_share, host.begin()));
  EXPECT_TRUE(std::all_of(top.begin() + first_share, top.end(), [](uint32_t label) { return label == 0; }));
}

// A GPU that cannot score (here one that does not exist, in any build) costs the stage nothing but
// time: the host scores its share, and the fault is said.
TEST(DeviceShortlists, AFailedGpusShareIsScoredOnTheHost) {
  ShortlistCase s;
  std::vector<std::string> faults;
  EXPECT_EQ(ShortlistsOnDevices(On("cuda:7,cpu:1"), s.mlp, s.rows, 20, {}, &faults), engine::TopLabels(s.mlp, s.rows, 20));
  ASSERT_EQ(faults.size(), 1u);
  EXPECT_EQ(faults[0].rfind("cuda:7: ", 0), 0u) << faults[0];
}

TEST(DeviceShortlists, TheHostComputesInBf16OnlyWhereTheRunDoes) {
  ShortlistCase s;
  // tf32 is a GPU's: the host's share is scored in fp32, as the run's CPU devices trained.
  EXPECT_EQ(ShortlistsOnDevices(On("cpu:2", kernels::OutputMath::kTf32), s.mlp, s.rows, 20),
            engine::TopLabels(s.mlp, s.rows, 20));
}

}  // namespace
}  // namespace xmlt::run
