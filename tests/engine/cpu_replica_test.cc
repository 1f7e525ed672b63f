// Tests of the CPU replica: a step is exactly the kernel's TrainStep on the gathered batch, the
// momentum buffer carries over between steps as heavy-ball momentum, and bad momentum is refused.
#include "engine/cpu_replica.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <stdexcept>
#include <vector>

#include "data/sparse_batch.h"
#include "engine/device.h"
#include "engine/device_spec.h"
#include "kernels/cpu/bf16_gemm.h"
#include "kernels/cpu/sparse_mlp.h"
#include "tests/make_dataset.h"

namespace xmlt::engine {
namespace {

using kernels::Model;
using kernels::ModelShape;

constexpr uint64_t kFeatures = 30, kLabels = 6;

// Random rows of 3..8 features and 1..2 labels, with every tenth row unlabeled.
data::Dataset RandomDataset(uint64_t rows, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<testing::DatasetRow> rows_out(rows);
  for (uint64_t r = 0; r < rows; ++r) {
    std::vector<uint32_t> ids(kFeatures);
    for (uint32_t i = 0; i < kFeatures; ++i) ids[i] = i;
    std::shuffle(ids.begin(), ids.end(), rng);
    ids.resize(3 + rng() % 6);
    std::sort(ids.begin(), ids.end());
    for (uint32_t id : ids) rows_out[r].features.emplace_back(id, 0.25f + float(rng() % 8) / 8);
    if (r % 10 != 9) {
      const uint32_t a = uint32_t(rng() % kLabels), b = uint32_t(rng() % kLabels);
      rows_out[r].labels.push_back(std::min(a, b));
      if (a != b) rows_out[r].labels.push_back(std::max(a, b));
    }
  }
  return testing::MakeDataset(rows_out, kFeatures, kLabels, "random");
}

ModelShape Shape() {
  ModelShape shape;
  shape.num_features = kFeatures;
  shape.hidden = {8};
  shape.num_labels = kLabels;
  shape.normalize_rows = false;
  return shape;
}

// The plain-SGD step or the gradient, computed straight with the kernel.
struct Manual {
  explicit Manual(const ModelShape& shape) : workspace(shape, 16) {}
  kernels::cpu::MlpWorkspace<float> workspace;
  data::SparseBatch batch;

  kernels::cpu::LossResult Step(Model<float>* model, const data::Dataset& d,
                                const std::vector<uint64_t>& rows, float lr) {
    data::GatherBatch(d, rows.data(), rows.size(), &batch);
    kernels::cpu::StepRule<float> rule;
    rule.lr = lr;
    return kernels::cpu::TrainStep(model, batch, rule, &workspace);
  }
  Model<float> Gradient(const Model<float>& at, const data::Dataset& d,
                        const std::vector<uint64_t>& rows) {
    Model<float> copy = at;
    Model<float> gradient = kernels::ZeroModel<float>(at.shape);
    data::GatherBatch(d, rows.data(), rows.size(), &batch);
    kernels::cpu::StepRule<float> rule;
    rule.gradient = &gradient;
    kernels::cpu::TrainStep(&copy, batch, rule, &workspace);
    return gradient;
  }
};

TEST(CpuReplicaTest, StepWithoutMomentumIsTheKernelsSgdStep) {
  const data::Dataset d = RandomDataset(40, 1);
  const Model<float> start = kernels::InitModel<float>(Shape(), 2);
  CpuReplica replica(start, 16, 0.0f);
  Model<float> expected = start;
  Manual manual(Shape());
  const std::vector<uint64_t> rows = {3, 17, 0, 9, 25, 31, 12};  // 9 is unlabeled
  const float lr = 0.2f;
  const kernels::cpu::LossResult got = replica.TrainBatch(d, rows.data(), rows.size(), lr);
  const kernels::cpu::LossResult want = manual.Step(&expected, d, rows, lr);
  EXPECT_EQ(got.labeled_rows, 6u);
  EXPECT_EQ(got.labeled_rows, want.labeled_rows);
  EXPECT_EQ(got.loss_sum, want.loss_sum);
  EXPECT_EQ(replica.model().params, expected.params);
  EXPECT_NE(replica.model().params, start.params);  // the step did something

  // A second step on other rows stays identical.
  const std::vector<uint64_t> more = {1, 2, 4, 5};
  replica.TrainBatch(d, more.data(), more.size(), lr);
  manual.Step(&expected, d, more, lr);
  EXPECT_EQ(replica.model().params, expected.params);
}

TEST(CpuReplicaTest, MomentumAccumulatesAcrossSteps) {
  const data::Dataset d = RandomDataset(40, 3);
  const Model<float> w0 = kernels::InitModel<float>(Shape(), 4);
  const float lr = 0.1f, momentum = 0.5f;
  // The same rows twice, so every touched first-layer row sees both gradients.
  const std::vector<uint64_t> rows = {0, 1, 2, 3, 4, 5, 6, 7, 8, 10};
  Manual manual(Shape());

  CpuReplica replica(w0, 16, momentum);
  replica.TrainBatch(d, rows.data(), rows.size(), lr);
  // Step 1 from a zero buffer: v1 = g1, w1 = w0 - lr g1.
  const Model<float> g1 = manual.Gradient(w0, d, rows);
  Model<float> w1 = w0;
  for (size_t i = 0; i < w1.params.size(); ++i) w1.params[i] -= lr * g1.params[i];
  for (size_t i = 0; i < w1.params.size(); ++i)
    ASSERT_NEAR(replica.model().params[i], w1.params[i], 1e-6) << "step 1, parameter " << i;

  const Model<float> after1 = replica.model();
  replica.TrainBatch(d, rows.data(), rows.size(), lr);
  // Step 2: v2 = momentum v1 + g2, w2 = w1 - lr v2, with g2 taken at the replica's w1.
  const Model<float> g2 = manual.Gradient(after1, d, rows);
  double moved_by_momentum = 0;
  for (size_t i = 0; i < w1.params.size(); ++i) {
    const float v2 = momentum * g1.params[i] + g2.params[i];
    const float w2 = after1.params[i] - lr * v2;
    ASSERT_NEAR(replica.model().params[i], w2, 1e-5) << "step 2, parameter " << i;
    moved_by_momentum += std::abs(double(lr * momentum * g1.params[i]));
  }
  EXPECT_GT(moved_by_momentum, 1e-3);  // the momentum term was large enough to be seen

  // Without momentum the second step is plain SGD, which differs.
  CpuReplica plain(w0, 16, 0.0f);
  plain.TrainBatch(d, rows.data(), rows.size(), lr);
  plain.TrainBatch(d, rows.data(), rows.size(), lr);
  double difference = 0;
  for (size_t i = 0; i < w1.params.size(); ++i)
    difference += std::abs(double(plain.model().params[i]) - replica.model().params[i]);
  EXPECT_GT(difference, 1e-3);
}

TEST(CpuReplicaTest, MomentumLeavesFirstLayerRowsOutsideTheBatchAlone) {
  // Lazy momentum (sparse_mlp.h): a feature seen in step 1 but absent from step 2 keeps its
  // weights in step 2 although its velocity is non-zero.
  const data::Dataset d = RandomDataset(40, 5);
  CpuReplica replica(kernels::InitModel<float>(Shape(), 6), 16, 0.9f);
  const std::vector<uint64_t> first = {0, 1, 2, 3};
  const std::vector<uint64_t> second = {4};
  replica.TrainBatch(d, first.data(), first.size(), 0.1f);
  const Model<float> after_first = replica.model();
  replica.TrainBatch(d, second.data(), second.size(), 0.1f);
  std::vector<bool> in_second(kFeatures, false);
  for (uint64_t e = d.features.RowBegin(4); e < d.features.RowEnd(4); ++e)
    in_second[d.features.col_idx[e]] = true;
  const uint32_t hidden = 8;
  int untouched_rows = 0;
  for (uint32_t f = 0; f < kFeatures; ++f) {
    if (in_second[f]) continue;
    ++untouched_rows;
    for (uint32_t u = 0; u < hidden; ++u)
      EXPECT_EQ(replica.model().Weight(0)[f * hidden + u], after_first.Weight(0)[f * hidden + u])
          << "feature " << f;
  }
  EXPECT_GT(untouched_rows, 0);
}

TEST(CpuReplicaTest, InvalidMomentumThrows) {
  const Model<float> model = kernels::InitModel<float>(Shape(), 1);
  EXPECT_THROW(CpuReplica(model, 8, -0.1f), std::invalid_argument);
  EXPECT_THROW(CpuReplica(model, 8, 1.0f), std::invalid_argument);
  EXPECT_THROW(CpuReplica(model, 8, 1.5f), std::invalid_argument);
  EXPECT_THROW(CpuReplica(model, 8, std::numeric_limits<float>::infinity()), std::invalid_argument);
  EXPECT_NO_THROW(CpuReplica(model, 8, 0.0f));
  EXPECT_NO_THROW(CpuReplica(model, 8, 0.99f));
}

// Regression: NaN fails every comparison, so a range check written as `m < 0 || m >= 1` let it
// through and training silently ran without momentum.
TEST(CpuReplicaTest, NanMomentumThrows) {
  const Model<float> model = kernels::InitModel<float>(Shape(), 1);
  EXPECT_THROW(CpuReplica(model, 8, std::numeric_limits<float>::quiet_NaN()),
               std::invalid_argument);
}

// The factory checks the momentum for every backend before it builds anything, a GPU's too (the
// CUDA replica does not check it itself): the refusal names the momentum, not a missing GPU.
TEST(MakeDeviceTest, RefusesMomentumOutsideZeroToOneForEveryBackend) {
  const Model<float> model = kernels::InitModel<float>(Shape(), 1);
  const DeviceLimits limits{8, 64, 16};
  for (const std::string devices : {"cpu:1", "cuda:0"}) {
    const DeviceSpec spec = ParseDeviceList(devices).at(0);
    for (float m : {-0.1f, 1.0f, std::numeric_limits<float>::quiet_NaN()}) {
      try {
        MakeDevice(spec, model, limits, m);
        ADD_FAILURE() << devices << " took momentum " << m;
      } catch (const std::invalid_argument& e) {
        EXPECT_NE(std::string(e.what()).find("momentum"), std::string::npos) << devices << ": " << e.what();
      }
    }
  }
  EXPECT_NO_THROW(MakeDevice(ParseDeviceList("cpu:1").at(0), model, limits, 0.9f));
}

// Dropout draws its masks from (seed, stream, step count): a replica restored from another's
// parameters, momentum and step count trains on exactly as the other does; without the step count
// it draws other masks. Another stream (device) draws other masks too.
TEST(CpuReplicaTest, DropoutResumesExactlyFromTheSavedStepCount) {
  const data::Dataset d = RandomDataset(40, 5);
  const StepSettings step_settings{1e-3f, 0.4f, 7, 1};
  const Model<float> w0 = kernels::InitModel<float>(Shape(), 6);
  const std::vector<std::vector<uint64_t>> batches = {{0, 1, 2, 3}, {4, 5, 6}, {7, 8, 9, 10}, {11, 12}};
  CpuReplica through(w0, 16, 0.9f, kernels::OutputMath::kFp32, step_settings);
  for (const auto& b : batches) through.TrainBatch(d, b.data(), b.size(), 0.1f);

  CpuReplica first(w0, 16, 0.9f, kernels::OutputMath::kFp32, step_settings);
  for (size_t k = 0; k < 2; ++k) first.TrainBatch(d, batches[k].data(), batches[k].size(), 0.1f);
  ASSERT_EQ(first.SaveStepCount().size(), 8u);
  for (const bool with_count : {true, false}) {
    CpuReplica resumed(first.model(), 16, 0.9f, kernels::OutputMath::kFp32, step_settings);
    const std::vector<float> velocity = first.SaveVelocity();
    resumed.RestoreVelocity(velocity.data(), velocity.size());
    if (with_count) resumed.RestoreStepCount(first.SaveStepCount());
    for (size_t k = 2; k < batches.size(); ++k) resumed.TrainBatch(d, batches[k].data(), batches[k].size(), 0.1f);
    EXPECT_EQ(resumed.model().params == through.model().params, with_count);
  }
  StepSettings other_stream = step_settings;
  other_stream.stream = 2;
  CpuReplica other(w0, 16, 0.9f, kernels::OutputMath::kFp32, other_stream);
  for (const auto& b : batches) other.TrainBatch(d, b.data(), b.size(), 0.1f);
  EXPECT_NE(other.model().params, through.model().params);
  // Without dropout the count is not state: nothing to save, and a count is refused.
  CpuReplica plain(w0, 16, 0.9f, kernels::OutputMath::kFp32, {1e-3f, 0, 7, 1});
  EXPECT_TRUE(plain.SaveStepCount().empty());
  EXPECT_THROW(plain.RestoreStepCount(first.SaveStepCount()), std::invalid_argument);
}

// A bf16 optimizer state (--optimizer-state bf16) rounds with noise drawn from (seed, stream, step
// count): a replica restored from another's parameters, state and step count trains on bit for bit
// as the other does; without the count it rounds differently. Its state is half the fp32 one's
// memory and holds only bf16 values.
TEST(CpuReplicaTest, Bf16StateResumesExactlyFromTheSavedStepCount) {
  if (!kernels::cpu::Bf16Available(nullptr)) GTEST_SKIP() << "no native bf16 here: the bf16 state needs bf16 products";
  const data::Dataset d = RandomDataset(40, 8);
  StepSettings step_settings{0, 0, 7, 1, 0.5f};
  step_settings.bf16_optimizer_state = true;
  const Model<float> w0 = kernels::InitModel<float>(Shape(), 9);
  const std::vector<std::vector<uint64_t>> batches = {{0, 1, 2, 3}, {4, 5, 6}, {7, 8, 9, 10}, {11, 12}};
  const auto math = kernels::OutputMath::kBf16;
  CpuReplica through(w0, 16, 0.9f, math, step_settings);
  for (const auto& b : batches) through.TrainBatch(d, b.data(), b.size(), 0.1f);

  CpuReplica first(w0, 16, 0.9f, math, step_settings);
  for (size_t k = 0; k < 2; ++k) first.TrainBatch(d, batches[k].data(), batches[k].size(), 0.1f);
  ASSERT_EQ(first.SaveStepCount().size(), 8u);
  const std::vector<float> state = first.SaveVelocity();
  ASSERT_EQ(state.size(), w0.params.size());
  for (float v : state) {
    uint32_t bits;
    std::memcpy(&bits, &v, sizeof bits);
    ASSERT_EQ(bits & 0xffffu, 0u) << v << " is not a bf16 value";
  }
  for (const bool with_count : {true, false}) {
    CpuReplica resumed(first.model(), 16, 0.9f, math, step_settings);
    resumed.RestoreVelocity(state.data(), state.size());
    EXPECT_EQ(resumed.SaveVelocity(), state);  // bf16 values survive the round trip through floats
    if (with_count) resumed.RestoreStepCount(first.SaveStepCount());
    for (size_t k = 2; k < batches.size(); ++k) resumed.TrainBatch(d, batches[k].data(), batches[k].size(), 0.1f);
    EXPECT_EQ(resumed.model().params == through.model().params && resumed.SaveVelocity() == through.SaveVelocity(),
              with_count);
  }
}

// A bf16 state streams as floats in pieces of at most 1 Mi values, restores from an fp32 state
// (rounded to nearest) and into an fp32 replica (exactly); a wrong size, fp32 products, or a
// replica without momentum are refused.
TEST(CpuReplicaTest, Bf16StateStreamsAndRestoresAcrossFormats) {
  if (!kernels::cpu::Bf16Available(nullptr)) GTEST_SKIP() << "no native bf16 here: the bf16 state needs bf16 products";
  ModelShape shape = Shape();
  shape.num_features = 4000;
  shape.hidden = {300};  // 1,207,520 parameters: more than one piece
  const Model<float> w0 = kernels::InitModel<float>(shape, 10);
  StepSettings bf16{0, 0, 7, 0, 0.5f};
  bf16.bf16_optimizer_state = true;
  const auto math = kernels::OutputMath::kBf16;
  CpuReplica replica(w0, 16, 0.9f, math, bf16);
  std::vector<float> fp32_state(w0.params.size());
  std::mt19937_64 rng(11);
  std::uniform_real_distribution<float> uniform(-1, 1);
  for (float& v : fp32_state) v = uniform(rng);
  replica.RestoreVelocity(fp32_state.data(), fp32_state.size());
  std::vector<size_t> pieces;
  std::vector<float> streamed;
  replica.StreamVelocity([&](const float* values, size_t count) {
    pieces.push_back(count);
    streamed.insert(streamed.end(), values, values + count);
  });
  ASSERT_EQ(pieces, (std::vector<size_t>{size_t(1) << 20, w0.params.size() - (size_t(1) << 20)}));
  for (size_t i = 0; i < streamed.size(); ++i)
    ASSERT_EQ(streamed[i], kernels::cpu::Bf16ToFloat(kernels::cpu::FloatToBf16(fp32_state[i]))) << i;

  CpuReplica fp32(w0, 16, 0.9f, math, StepSettings{0, 0, 7, 0, 0.5f});
  fp32.RestoreVelocity(streamed.data(), streamed.size());
  EXPECT_EQ(fp32.SaveVelocity(), streamed);

  EXPECT_THROW(replica.RestoreVelocity(streamed.data(), streamed.size() - 1), std::invalid_argument);
  replica.RestoreVelocity(nullptr, 0);
  for (float v : replica.SaveVelocity()) ASSERT_EQ(v, 0.0f);
  EXPECT_THROW(CpuReplica(w0, 16, 0.9f, kernels::OutputMath::kFp32, bf16), std::invalid_argument);
  // Nothing to keep without momentum or Adagrad: no state, and no step count either.
  CpuReplica none(w0, 16, 0.0f, math, StepSettings{0, 0, 7, 0, 0, true});
  EXPECT_EQ(none.VelocitySize(), 0u);
  EXPECT_TRUE(none.SaveStepCount().empty());
}

// bf16 weights (--weights bf16) keep no fp32 parameters: the replica holds two bytes a parameter
// and streams them widened; their rounding draws from the step count as the state's does, so a
// replica restored from another's streamed parameters, state and count trains on bit for bit as
// the other does (and without the count, differently). Restoring rounds to nearest: an fp32 model
// loads to its bf16 neighbours, bf16 values exactly; a wrong count, or fp32 products, are refused.
TEST(CpuReplicaTest, Bf16WeightsKeepNoFp32CopyAndResumeExactly) {
  if (!kernels::cpu::Bf16Available(nullptr)) GTEST_SKIP() << "no native bf16 here: bf16 weights need bf16 products";
  const data::Dataset d = RandomDataset(40, 12);
  StepSettings step_settings{0, 0, 7, 1, 0.5f};
  step_settings.bf16_optimizer_state = true;
  step_settings.bf16_weights = true;
  const Model<float> w0 = kernels::InitModel<float>(Shape(), 13);
  const auto math = kernels::OutputMath::kBf16;
  const auto streamed = [](const CpuReplica& replica) {
    std::vector<float> values;
    replica.StreamParams([&](const float* piece, size_t count) { values.insert(values.end(), piece, piece + count); });
    return values;
  };
  CpuReplica through(w0, 16, 0.9f, math, step_settings);
  EXPECT_TRUE(through.WeightsInBf16());
  EXPECT_TRUE(through.model().params.empty());
  ASSERT_EQ(through.NumParams(), w0.params.size());
  const std::vector<float> start = streamed(through);
  for (size_t i = 0; i < start.size(); ++i)
    ASSERT_EQ(start[i], kernels::cpu::Bf16ToFloat(kernels::cpu::FloatToBf16(w0.params[i]))) << i;

  const std::vector<std::vector<uint64_t>> batches = {{0, 1, 2, 3}, {4, 5, 6}, {7, 8, 9, 10}, {11, 12}};
  for (const auto& b : batches) through.TrainBatch(d, b.data(), b.size(), 0.1f);
  CpuReplica first(w0, 16, 0.9f, math, step_settings);
  for (size_t k = 0; k < 2; ++k) first.TrainBatch(d, batches[k].data(), batches[k].size(), 0.1f);
  const std::vector<float> params = streamed(first);
  EXPECT_NE(params, start);
  for (const bool with_count : {true, false}) {
    CpuReplica resumed(w0, 16, 0.9f, math, step_settings);
    resumed.RestoreParams(params.data(), params.size());
    EXPECT_EQ(streamed(resumed), params);  // bf16 values survive the round trip through floats
    resumed.RestoreVelocity(first.SaveVelocity().data(), first.VelocitySize());
    if (with_count) resumed.RestoreStepCount(first.SaveStepCount());
    for (size_t k = 2; k < batches.size(); ++k) resumed.TrainBatch(d, batches[k].data(), batches[k].size(), 0.1f);
    EXPECT_EQ(streamed(resumed) == streamed(through), with_count);
  }
  // Plain SGD with bf16 weights still keeps the count: the weights' rounding draws from it.
  StepSettings sgd{0, 0, 7, 1, 0};
  sgd.bf16_weights = true;
  CpuReplica plain(w0, 16, 0.0f, math, sgd);
  EXPECT_EQ(plain.VelocitySize(), 0u);
  EXPECT_EQ(plain.SaveStepCount().size(), 8u);
  EXPECT_THROW(plain.RestoreParams(params.data(), params.size() - 1), std::invalid_argument);
  plain.RestoreParams(w0.params.data(), w0.params.size());  // fp32 values: each to its nearest bf16
  EXPECT_EQ(streamed(plain), start);
  EXPECT_THROW(CpuReplica(w0, 16, 0.9f, kernels::OutputMath::kFp32, step_settings), std::invalid_argument);
}

// All zeros (the default) is the unregularized step, bit for bit.
TEST(CpuReplicaTest, NoRegularizationIsThePlainStep) {
  const data::Dataset d = RandomDataset(40, 5);
  const Model<float> w0 = kernels::InitModel<float>(Shape(), 6);
  CpuReplica plain(w0, 16, 0.9f);
  CpuReplica zeros(w0, 16, 0.9f, kernels::OutputMath::kFp32, {0, 0, 99, 3});
  CpuReplica decayed(w0, 16, 0.9f, kernels::OutputMath::kFp32, {1e-2f, 0, 99, 3});
  const std::vector<uint64_t> rows = {0, 1, 2, 3, 4, 5};
  for (int k = 0; k < 3; ++k) {
    plain.TrainBatch(d, rows.data(), rows.size(), 0.1f);
    zeros.TrainBatch(d, rows.data(), rows.size(), 0.1f);
    decayed.TrainBatch(d, rows.data(), rows.size(), 0.1f);
  }
  EXPECT_EQ(plain.model().params, zeros.model().params);
  EXPECT_NE(plain.model().params, decayed.model().params);
}

TEST(CpuReplicaTest, InvalidRegularizationThrows) {
  const Model<float> model = kernels::InitModel<float>(Shape(), 1);
  const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
  for (const auto& [decay, dropout] :
       std::vector<std::pair<float, float>>{{-1e-5f, 0}, {nan, 0}, {inf, 0}, {0, 1}, {0, -0.5f}, {0, nan}})
    EXPECT_THROW(CpuReplica(model, 8, 0.9f, kernels::OutputMath::kFp32, {decay, dropout, 1, 0}), std::invalid_argument)
        << decay << " " << dropout;
  EXPECT_NO_THROW(CpuReplica(model, 8, 0.9f, kernels::OutputMath::kFp32, {1e-4f, 0.5f, 1, 0}));
}

// Weight decay is the CPU dense step's alone: a GPU and the sampled output layer refuse it;
// dropout and the first layer's Adagrad every step takes.
TEST(MakeDeviceTest, WeightDecayIsRefusedWhereNotImplemented) {
  const Model<float> model = kernels::InitModel<float>(Shape(), 1);
  const DeviceLimits limits{8, 64, 16};
  SampledOutputOptions sampled;
  sampled.enabled = true;
  EXPECT_THROW(MakeDevice(ParseDeviceList("cuda:0").at(0), model, limits, 0.9f, kernels::OutputMath::kFp32, {},
                          {1e-4f, 0, 1, 0}),
               std::invalid_argument);
  EXPECT_THROW(MakeDevice(ParseDeviceList("cpu:1").at(0), model, limits, 0.0f, kernels::OutputMath::kFp32, sampled,
                          {1e-4f, 0, 1, 0}),
               std::invalid_argument);
  EXPECT_NO_THROW(MakeDevice(ParseDeviceList("cpu:1").at(0), model, limits, 0.0f, kernels::OutputMath::kFp32, sampled,
                             {0, 0.5f, 1, 0, 0.3f}));
  EXPECT_NO_THROW(MakeDevice(ParseDeviceList("cpu:1").at(0), model, limits, 0.9f, kernels::OutputMath::kFp32, {},
                             {1e-4f, 0.5f, 1, 0}));
}

// A batch beyond the rows the replica was sized for is refused before it is gathered, and the
// model is left untouched.
TEST(CpuReplicaTest, BatchLargerThanItsBuffersThrows) {
  const data::Dataset d = RandomDataset(20, 9);
  CpuReplica replica(kernels::InitModel<float>(Shape(), 1), 4, 0.0f);
  const std::vector<float> before = replica.model().params;
  const std::vector<uint64_t> rows = {0, 1, 2, 3, 4};
  EXPECT_THROW(replica.TrainBatch(d, rows.data(), rows.size(), 0.1f), std::invalid_argument);
  EXPECT_EQ(replica.model().params, before);
  EXPECT_NO_THROW(replica.TrainBatch(d, rows.data(), 4, 0.1f));
}

}  // namespace
}  // namespace xmlt::engine
