// --lr auto with CUDA devices: where the search runs (the first GPU when every device is a GPU, the
// CPU otherwise and across ranks), and that on a GPU it scores the grid as the CPU does.
#include <gtest/gtest.h>

#include <cmath>

#include "data/row_normalization.h"
#include "data/synthetic_generator.h"
#include "engine/device_spec.h"
#include "run/lr_search.h"
#include "tests/kernels/cuda_test_gate.h"

namespace xmlt::run {
namespace {

TEST(LrSearchDevice, TheFirstGpuWhenEveryDeviceIsAGpuElseTheCpu) {
  const engine::DeviceSpec logical = LrSearchDevice(engine::ParseDeviceList("cuda:1x2,cuda:0"), 1);
  EXPECT_EQ(logical.kind, engine::DeviceKind::kCuda);
  EXPECT_EQ(logical.ordinal, 1);
  EXPECT_EQ(logical.logical, 0);
  EXPECT_EQ(logical.id, "cuda:1");
  EXPECT_EQ(LrSearchDevice(engine::ParseDeviceList("cuda:0,cpu:1"), 1).kind, engine::DeviceKind::kCpu);
  EXPECT_EQ(LrSearchDevice(engine::ParseDeviceList("cpu:2"), 1).kind, engine::DeviceKind::kCpu);
  // Every rank must pick the same rate, and another rank may not have this GPU.
  EXPECT_EQ(LrSearchDevice(engine::ParseDeviceList("cuda:0"), 2).kind, engine::DeviceKind::kCpu);
}

TEST(CudaLrSearch, OnAGpuScoresTheGridAsTheCpuDoesAndPicksTheSameRate) {
  XMLT_SKIP_WITHOUT_GPU();
  data::GeneratorConfig config;
  config.train_rows = 600;
  config.test_rows = 1;
  config.features = 300;
  config.labels = 40;
  config.nnz_per_row = 12;
  config.labels_per_row = 2;
  const data::Dataset train = data::NormalizeRowsL2(data::Generate(config).train);
  scheduler::TrainOptions options;
  options.batch = 64;
  const kernels::ModelShape shape{train.num_features(), {16}, train.num_labels()};
  const LrSearchResult cpu = SearchLearningRate(train, shape, options, engine::DeviceSpec{});
  const LrSearchResult gpu = SearchLearningRate(train, shape, options, LrSearchDevice(engine::ParseDeviceList("cuda:0"), 1));
  ASSERT_EQ(gpu.candidates.size(), cpu.candidates.size());
  EXPECT_EQ(gpu.picked, cpu.picked);
  EXPECT_EQ(gpu.winner, cpu.winner);
  for (size_t i = 0; i < cpu.candidates.size(); ++i) {
    const LrCandidate &c = cpu.candidates[i], &g = gpu.candidates[i];
    EXPECT_EQ(g.diverged, c.diverged) << "lr " << c.lr;
    if (!c.diverged) {
      EXPECT_NEAR(g.heldout_p1, c.heldout_p1, 0.02) << "lr " << c.lr;
      EXPECT_NEAR(g.heldout_loss, c.heldout_loss, 1e-3 * c.heldout_loss) << "lr " << c.lr;
    }
  }
}

}  // namespace
}  // namespace xmlt::run
