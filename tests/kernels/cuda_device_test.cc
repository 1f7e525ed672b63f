// The engine's CUDA device (engine/cuda_device.cc, built by MakeDevice for "cuda:0") against the
// CPU device on the same rows: training, its host mirror for merges (PrepareMerge copies the
// replica out, FinishMerge copies the merged state back in), its optimizer state for checkpoints
// (SaveOptimizerState / RestoreOptimizerState, and streamed through a bounded chunk), and
// EvaluateRows against the CPU evaluator.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "data/dataset.h"
#include "engine/cuda_device.h"
#include "engine/device.h"
#include "engine/device_spec.h"
#include "engine/evaluator.h"
#include "kernels/cpu/stochastic_rounding.h"
#include "kernels/model.h"
#include "tests/kernels/cuda_test_gate.h"
#include "tests/kernels/kernel_test_util.h"
#include "tests/make_dataset.h"
#include "tests/test_support.h"

namespace xmlt::engine {
namespace {

using kernels::Model;
using kernels::ModelShape;

const ModelShape kShape{501, {65, 31}, 203};
constexpr uint32_t kMaxRows = 32;
constexpr uint64_t kTrainRows = 300;

DeviceSpec CudaSpec() {
  DeviceSpec spec;
  spec.kind = DeviceKind::kCuda;
  spec.ordinal = 0;
  spec.id = "cuda:0";
  return spec;
}

DeviceSpec CpuSpec() { return DeviceSpec{}; }  // cpu:0

// RandomBatch's rows as a dataset (row 1 without features, row 2 without labels).
data::Dataset RandomDataset(uint32_t rows, uint32_t features, uint32_t labels, uint64_t seed) {
  const data::SparseBatch batch = xmlt::testing::RandomBatch(rows, features, labels, seed);
  std::vector<xmlt::testing::DatasetRow> out(rows);
  for (uint32_t r = 0; r < rows; ++r) {
    for (uint64_t e = batch.feature_ptr[r]; e < batch.feature_ptr[r + 1]; ++e)
      out[r].features.emplace_back(batch.feature_idx[e], batch.feature_val[e]);
    out[r].labels.assign(batch.label_idx.begin() + batch.label_ptr[r],
                         batch.label_idx.begin() + batch.label_ptr[r + 1]);
  }
  return xmlt::testing::MakeDataset(out, features, labels);
}

// Step `step`'s rows: 1 to kMaxRows distinct rows of the training set.
std::vector<uint64_t> RowsFor(uint32_t step) {
  const uint32_t count = 1 + (step * 7919u) % kMaxRows;
  std::vector<uint64_t> rows;
  for (uint32_t k = 0; k < count; ++k) rows.push_back((uint64_t(step) * 13 + uint64_t(k) * 7) % kTrainRows);
  return rows;
}

// Both devices take the same steps; their losses agree as CudaMlp's do with the CPU's.
void TrainBoth(Device* gpu, Device* cpu, const data::Dataset& train, uint32_t first, uint32_t end,
               float lr) {
  for (uint32_t step = first; step < end; ++step) {
    const std::vector<uint64_t> rows = RowsFor(step);
    const kernels::cpu::LossResult actual = gpu->TrainBatch(train, rows.data(), rows.size(), lr);
    const kernels::cpu::LossResult expected = cpu->TrainBatch(train, rows.data(), rows.size(), lr);
    ASSERT_EQ(actual.labeled_rows, expected.labeled_rows) << "step " << step;
    ASSERT_NEAR(actual.loss_sum, expected.loss_sum, 1e-4 * std::max(1.0, std::abs(expected.loss_sum)))
        << "step " << step;
  }
}

// The bound of CudaMlp's trajectories against the CPU's over tens of steps: fp32 rounding drifts
// by about 1e-7 of max(1, |x|); an entry not copied, or copied from the wrong place, is off by x.
void ExpectNear(const float* actual, const float* expected, size_t n, const std::string& what) {
  for (size_t i = 0; i < n; ++i)
    ASSERT_NEAR(actual[i], expected[i], 1e-4f * std::max(1.0f, std::abs(expected[i]))) << what << " entry " << i;
}

// A CUDA device and a CPU device built alike from one model, and the rows both train on.
struct DevicePair {
  DevicePair(uint64_t data_seed, uint64_t model_seed, float momentum, const StepSettings& step_settings = {})
      : train(RandomDataset(kTrainRows, 501, 203, data_seed)), initial(kernels::InitModel<float>(kShape, model_seed)) {
    const DeviceLimits limits = LimitsFor(train, kMaxRows);
    gpu = MakeDevice(CudaSpec(), initial, limits, momentum, kernels::OutputMath::kFp32, {}, step_settings);
    cpu = MakeDevice(CpuSpec(), initial, limits, momentum, kernels::OutputMath::kFp32, {}, step_settings);
  }
  data::Dataset train;
  Model<float> initial;
  std::unique_ptr<Device> gpu, cpu;
};

TEST(CudaDevice, MergeMirrorCopiesTheReplicaOutAndTheMergedStateBackIn) {
  XMLT_SKIP_WITHOUT_GPU();
  DevicePair pair(1, 4, 0.9f);
  auto& [train, initial, gpu, cpu] = pair;
  const size_t n = initial.params.size();
  EXPECT_EQ(gpu->spec().id, "cuda:0");
  ASSERT_EQ(gpu->NumParams(), n);
  EXPECT_TRUE(xmlt::testing::SameBits(gpu->HostParams(), initial.params.data(), n));

  ASSERT_NO_FATAL_FAILURE(TrainBoth(gpu.get(), cpu.get(), train, 0, 10, 0.1f));
  gpu->PrepareMerge();
  ExpectNear(gpu->HostParams(), cpu->HostParams(), n, "mirror after PrepareMerge");

  // A merge leaves its result in the mirror: here the average with the initial model, given to
  // both devices (the CPU device's HostParams is its model itself).
  std::vector<float> merged(n);
  for (size_t i = 0; i < n; ++i) merged[i] = 0.5f * (cpu->HostParams()[i] + initial.params[i]);
  std::copy(merged.begin(), merged.end(), gpu->HostParams());
  std::copy(merged.begin(), merged.end(), cpu->HostParams());
  gpu->FinishMerge();
  // Out again unchanged: FinishMerge uploaded the mirror exactly, and PrepareMerge rewrites all of
  // it (NaN in between).
  std::fill(gpu->HostParams(), gpu->HostParams() + n, std::nanf(""));
  gpu->PrepareMerge();
  EXPECT_TRUE(xmlt::testing::SameBits(gpu->HostParams(), merged.data(), n));

  // Training goes on from the merged state, with the momentum each device kept.
  ASSERT_NO_FATAL_FAILURE(TrainBoth(gpu.get(), cpu.get(), train, 10, 16, 0.1f));
  gpu->PrepareMerge();
  ExpectNear(gpu->HostParams(), cpu->HostParams(), n, "mirror after training from the merge");
}

TEST(CudaDevice, OptimizerStateRoundTripsAndMatchesCpuMomentum) {
  XMLT_SKIP_WITHOUT_GPU();
  DevicePair pair(2, 5, 0.9f);
  auto& [train, initial, gpu, cpu] = pair;
  const size_t n = initial.params.size();
  ASSERT_NO_FATAL_FAILURE(TrainBoth(gpu.get(), cpu.get(), train, 0, 8, 0.05f));
  const std::vector<float> saved = gpu->SaveOptimizerState();
  ASSERT_EQ(saved.size(), n);
  ExpectNear(saved.data(), cpu->SaveOptimizerState().data(), n, "saved velocity");

  // More steps move the velocity; restoring brings back exactly what was saved.
  for (uint32_t step = 8; step < 11; ++step) {
    const std::vector<uint64_t> rows = RowsFor(step);
    gpu->TrainBatch(train, rows.data(), rows.size(), 0.05f);
  }
  EXPECT_FALSE(xmlt::testing::SameBits(gpu->SaveOptimizerState().data(), saved.data(), n));
  gpu->RestoreOptimizerState(saved);
  EXPECT_TRUE(xmlt::testing::SameBits(gpu->SaveOptimizerState().data(), saved.data(), n));

  // A restored state is what training continues with: the CUDA device resumes from the CPU
  // device's parameters and velocity (a checkpoint written by one, read by the other).
  std::copy(cpu->HostParams(), cpu->HostParams() + n, gpu->HostParams());
  gpu->FinishMerge();
  gpu->RestoreOptimizerState(cpu->SaveOptimizerState());
  ASSERT_NO_FATAL_FAILURE(TrainBoth(gpu.get(), cpu.get(), train, 11, 17, 0.05f));
  gpu->PrepareMerge();
  ExpectNear(gpu->HostParams(), cpu->HostParams(), n, "parameters after resuming");
  ExpectNear(gpu->SaveOptimizerState().data(), cpu->SaveOptimizerState().data(), n, "velocity after resuming");

  // An empty state zeroes the velocity (a rollback must not carry the old one on); a state of
  // the wrong size is refused.
  gpu->RestoreOptimizerState({});
  const std::vector<float> zeroed = gpu->SaveOptimizerState();
  ASSERT_EQ(zeroed.size(), n);
  EXPECT_TRUE(std::all_of(zeroed.begin(), zeroed.end(), [](float v) { return v == 0.0f; }));
  EXPECT_THROW(gpu->RestoreOptimizerState(std::vector<float>(n - 1, 0.0f)), std::invalid_argument);
}

// A checkpoint moves the optimizer state through a chunk of bounded size, here 1,000 bytes (250
// values, which do not divide the state's size), so either way takes many chunks. What goes out
// is the CPU device's momentum; what comes back in, from bytes not aligned for a float (as in a
// checkpoint's mapping), is that state exactly, and training goes on from it as on the CPU.
TEST(CudaDevice, OptimizerStateMovesInChunksAndMatchesCpuMomentum) {
  XMLT_SKIP_WITHOUT_GPU();
  constexpr size_t kChunkBytes = 1000, kChunkValues = kChunkBytes / sizeof(float);
  const data::Dataset train = RandomDataset(kTrainRows, 501, 203, 6);
  const Model<float> initial = kernels::InitModel<float>(kShape, 9);
  const size_t n = initial.params.size();
  ASSERT_NE(n % kChunkValues, 0u);
  const DeviceLimits limits = LimitsFor(train, kMaxRows);
  std::unique_ptr<Device> gpu =
      MakeCudaDevice(CudaSpec(), initial, limits, 0.9f, kernels::OutputMath::kFp32, {}, kChunkBytes);
  std::unique_ptr<Device> cpu = MakeDevice(CpuSpec(), initial, limits, 0.9f);
  ASSERT_NO_FATAL_FAILURE(TrainBoth(gpu.get(), cpu.get(), train, 0, 8, 0.05f));

  ASSERT_EQ(gpu->OptimizerStateSize(), n);
  std::vector<float> streamed;
  size_t chunks = 0;
  gpu->StreamOptimizerState([&](const float* values, size_t count) {
    EXPECT_EQ(count, std::min(kChunkValues, n - streamed.size())) << "chunk " << chunks;
    streamed.insert(streamed.end(), values, values + count);
    ++chunks;
  });
  ASSERT_EQ(streamed.size(), n);
  EXPECT_EQ(chunks, (n + kChunkValues - 1) / kChunkValues);
  const std::vector<float> cpu_state = cpu->SaveOptimizerState();
  ExpectNear(streamed.data(), cpu_state.data(), n, "streamed velocity");

  // In from one byte past an aligned address, chunk by chunk; out again, bit for bit.
  std::vector<char> stored(n * sizeof(float) + 1);
  std::memcpy(stored.data() + 1, cpu_state.data(), n * sizeof(float));
  gpu->RestoreOptimizerState(stored.data() + 1, n);
  EXPECT_TRUE(xmlt::testing::SameBits(gpu->SaveOptimizerState().data(), cpu_state.data(), n));
  std::copy(cpu->HostParams(), cpu->HostParams() + n, gpu->HostParams());
  gpu->FinishMerge();
  ASSERT_NO_FATAL_FAILURE(TrainBoth(gpu.get(), cpu.get(), train, 8, 14, 0.05f));
  gpu->PrepareMerge();
  ExpectNear(gpu->HostParams(), cpu->HostParams(), n, "parameters after resuming");
  ExpectNear(gpu->SaveOptimizerState().data(), cpu->SaveOptimizerState().data(), n, "velocity after resuming");
  EXPECT_THROW(gpu->RestoreOptimizerState(cpu_state.data(), n - 1), std::invalid_argument);
  EXPECT_THROW(gpu->RestoreOptimizerState(cpu_state.data(), n + 1), std::invalid_argument);
}

TEST(CudaDevice, WithoutMomentumTrainsLikeCpuAndKeepsNoOptimizerState) {
  XMLT_SKIP_WITHOUT_GPU();
  DevicePair pair(3, 6, 0.0f);
  auto& [train, initial, gpu, cpu] = pair;
  const size_t n = initial.params.size();
  ASSERT_NO_FATAL_FAILURE(TrainBoth(gpu.get(), cpu.get(), train, 0, 12, 0.2f));
  gpu->PrepareMerge();
  ExpectNear(gpu->HostParams(), cpu->HostParams(), n, "parameters");
  EXPECT_TRUE(gpu->SaveOptimizerState().empty());
  EXPECT_NO_THROW(gpu->RestoreOptimizerState({}));
  EXPECT_THROW(gpu->RestoreOptimizerState(std::vector<float>(n, 0.0f)), std::invalid_argument);
}

// Dropout and the first layer's Adagrad, as the command line's defaults give them: the CUDA device
// draws the CPU device's masks for the same seed, device and step, and keeps Adagrad's squares in
// its momentum buffer even without momentum. A resume carries the masks' step count (extra state)
// and the squares; a weight decay is refused.
TEST(CudaDevice, DropoutAndAdagradTrainLikeTheCpuAndResume) {
  XMLT_SKIP_WITHOUT_GPU();
  StepSettings step_settings;
  step_settings.dropout = 0.5f;
  step_settings.seed = 17;
  step_settings.stream = 1;
  step_settings.input_adagrad_ratio = 0.5f;
  for (const float momentum : {0.0f, 0.9f}) {
    SCOPED_TRACE(momentum == 0 ? "plain SGD" : "momentum");
    DevicePair pair(4, 7, momentum, step_settings);
    auto& [train, initial, gpu, cpu] = pair;
    const size_t n = initial.params.size();
    ASSERT_NO_FATAL_FAILURE(TrainBoth(gpu.get(), cpu.get(), train, 0, 10, 0.1f));
    gpu->PrepareMerge();
    ExpectNear(gpu->HostParams(), cpu->HostParams(), n, "parameters");
    const std::vector<float> squares = gpu->SaveOptimizerState();
    ASSERT_EQ(squares.size(), n);
    ExpectNear(squares.data(), cpu->SaveOptimizerState().data(), n, "squares and velocity");
    EXPECT_EQ(gpu->SaveExtraState(), cpu->SaveExtraState()) << "the masks' step counts differ";

    // A fresh GPU replica resumed from the CPU's state goes on as the CPU does.
    std::unique_ptr<Device> resumed = MakeDevice(CudaSpec(), initial, LimitsFor(train, kMaxRows), momentum,
                                                 kernels::OutputMath::kFp32, {}, step_settings);
    std::copy(cpu->HostParams(), cpu->HostParams() + n, resumed->HostParams());
    resumed->FinishMerge();
    resumed->RestoreOptimizerState(cpu->SaveOptimizerState());
    resumed->RestoreExtraState(cpu->SaveExtraState());
    ASSERT_NO_FATAL_FAILURE(TrainBoth(resumed.get(), cpu.get(), train, 10, 16, 0.1f));
    resumed->PrepareMerge();
    ExpectNear(resumed->HostParams(), cpu->HostParams(), n, "parameters after resuming");
  }
  DevicePair plain(4, 7, 0.0f);
  EXPECT_TRUE(plain.gpu->SaveExtraState().empty());
  StepSettings decay;
  decay.weight_decay = 1e-4f;
  const data::Dataset train = RandomDataset(kTrainRows, 501, 203, 4);
  EXPECT_THROW(MakeDevice(CudaSpec(), kernels::InitModel<float>(kShape, 7), LimitsFor(train, kMaxRows), 0.0f,
                          kernels::OutputMath::kFp32, {}, decay),
               std::invalid_argument);
}

// --optimizer-state bf16 on a GPU: the device streams its bf16 state as floats a bf16 holds
// exactly, keeps the step count the rounding noise is drawn from (even without dropout), and a
// fresh replica restored from both goes on as the first does, bit for bit.
TEST(CudaDevice, Bf16StateResumesExactly) {
  XMLT_SKIP_WITHOUT_GPU();
  StepSettings step_settings;
  step_settings.seed = 5;
  step_settings.input_adagrad_ratio = 0.5f;
  step_settings.bf16_optimizer_state = true;
  const data::Dataset train = RandomDataset(kTrainRows, 501, 203, 6);
  const Model<float> initial = kernels::InitModel<float>(kShape, 9);
  const auto make = [&] {
    return MakeDevice(CudaSpec(), initial, LimitsFor(train, kMaxRows), 0.9f, kernels::OutputMath::kFp32, {},
                      step_settings);
  };
  std::unique_ptr<Device> gpu = make(), resumed = make();
  const auto train_steps = [&](Device& d, uint32_t first, uint32_t end) {
    for (uint32_t step = first; step < end; ++step) {
      const std::vector<uint64_t> rows = RowsFor(step);
      d.TrainBatch(train, rows.data(), rows.size(), 0.1f);
    }
  };
  train_steps(*gpu, 0, 10);
  const size_t n = initial.params.size();
  gpu->PrepareMerge();
  std::copy(gpu->HostParams(), gpu->HostParams() + n, resumed->HostParams());
  resumed->FinishMerge();
  const std::vector<float> state = gpu->SaveOptimizerState();
  ASSERT_EQ(state.size(), n);
  for (float x : state) ASSERT_EQ(x, kernels::cpu::WidenBf16(kernels::cpu::NearestBf16(x)));
  resumed->RestoreOptimizerState(state);
  ASSERT_EQ(gpu->SaveExtraState().size(), sizeof(uint64_t)) << "no step count for the rounding noise";
  resumed->RestoreExtraState(gpu->SaveExtraState());
  train_steps(*gpu, 10, 16);
  train_steps(*resumed, 10, 16);
  gpu->PrepareMerge();
  resumed->PrepareMerge();
  EXPECT_TRUE(xmlt::testing::SameBits(gpu->HostParams(), resumed->HostParams(), n));
  EXPECT_EQ(gpu->SaveOptimizerState(), resumed->SaveOptimizerState());
}

// Weights in bf16 (--weights bf16, with the state in bf16 too): the merges read and write the bf16
// host mirror (HostParams is null); a replica given another's mirror, state and step count trains
// on to the same bits; the fp32 forms a checkpoint reads and loads widen and round to nearest, so
// they carry the weights exactly; and an evaluation leaves the replica as it was.
TEST(CudaDevice, Bf16WeightsResumeExactlyThroughTheirMirror) {
  XMLT_SKIP_WITHOUT_GPU();
  StepSettings step_settings;
  step_settings.seed = 5;
  step_settings.input_adagrad_ratio = 0.5f;
  step_settings.bf16_optimizer_state = true;
  step_settings.bf16_weights = true;
  const data::Dataset train = RandomDataset(kTrainRows, 501, 203, 6);
  const Model<float> initial = kernels::InitModel<float>(kShape, 9);
  const auto make = [&] {
    return MakeDevice(CudaSpec(), initial, LimitsFor(train, kMaxRows), 0.9f, kernels::OutputMath::kBf16, {},
                      step_settings);
  };
  std::unique_ptr<Device> gpu = make(), resumed = make(), loaded = make();
  ASSERT_TRUE(gpu->KeepsBf16Weights());
  EXPECT_EQ(gpu->HostParams(), nullptr);
  const size_t n = initial.params.size();
  for (size_t j = 0; j < n; ++j)
    ASSERT_EQ(gpu->HostBf16Params()[j], kernels::cpu::NearestBf16(initial.params[j])) << "the start, rounded to nearest";
  const auto train_steps = [&](Device& d, uint32_t first, uint32_t end) {
    for (uint32_t step = first; step < end; ++step) {
      const std::vector<uint64_t> rows = RowsFor(step);
      d.TrainBatch(train, rows.data(), rows.size(), 0.1f);
    }
  };
  train_steps(*gpu, 0, 10);
  gpu->PrepareMerge();
  std::vector<uint16_t> trained(gpu->HostBf16Params(), gpu->HostBf16Params() + n);
  EXPECT_NE(trained, std::vector<uint16_t>(resumed->HostBf16Params(), resumed->HostBf16Params() + n));
  std::copy(trained.begin(), trained.end(), resumed->HostBf16Params());
  resumed->FinishMerge();
  std::vector<float> widened;
  gpu->StreamParams([&](const float* values, size_t count) { widened.insert(widened.end(), values, values + count); });
  ASSERT_EQ(widened.size(), n);
  loaded->LoadParams(widened.data(), n);
  loaded->FinishMerge();
  const std::vector<float> state = gpu->SaveOptimizerState();
  ASSERT_EQ(gpu->SaveExtraState().size(), sizeof(uint64_t)) << "no step count for the rounding noise";
  for (Device* d : {resumed.get(), loaded.get()}) {
    d->RestoreOptimizerState(state);
    d->RestoreExtraState(gpu->SaveExtraState());
  }
  // An evaluation on the replica puts it back: the run's training goes on from where it was.
  const data::Dataset test = RandomDataset(40, 501, 203, 8);
  std::vector<uint64_t> rows(test.num_rows());
  for (size_t r = 0; r < rows.size(); ++r) rows[r] = r;
  gpu->EvaluateRows(kernels::InitModel<float>(kShape, 12), test, rows.data(), rows.size());
  gpu->PrepareMerge();
  EXPECT_EQ(trained, std::vector<uint16_t>(gpu->HostBf16Params(), gpu->HostBf16Params() + n));
  for (Device* d : {gpu.get(), resumed.get(), loaded.get()}) train_steps(*d, 10, 16);
  for (Device* d : {gpu.get(), resumed.get(), loaded.get()}) d->PrepareMerge();
  const std::vector<uint16_t> end(gpu->HostBf16Params(), gpu->HostBf16Params() + n);
  EXPECT_NE(end, trained);
  EXPECT_EQ(end, std::vector<uint16_t>(resumed->HostBf16Params(), resumed->HostBf16Params() + n));
  EXPECT_EQ(end, std::vector<uint16_t>(loaded->HostBf16Params(), loaded->HostBf16Params() + n));
  EXPECT_EQ(gpu->SaveOptimizerState(), resumed->SaveOptimizerState());
}

// The device's share of an evaluation scores the model it is given (the global model, not its
// replica) on rows in any order, clipping ids beyond the model (a test file may name features and
// labels the training file never had), and must add up to what the CPU evaluator finds. The GPU
// scores in chunks of the replica's batch bounds (kMaxRows rows here, so several), rounds the loss
// differently (1e-5, as Predict's loss) and may swap a near-tied pair of labels: one row's worth
// (1 / rows) is allowed on each metric, a wrong chunk or clip would be off by far more.
TEST(CudaDevice, EvaluateRowsMatchesCpuEvaluatorAndLeavesTheReplica) {
  XMLT_SKIP_WITHOUT_GPU();
  const data::Dataset train = RandomDataset(kTrainRows, 501, 203, 7);
  const data::Dataset test = RandomDataset(120, 501 + 20, 203 + 5, 8);
  const Model<float> initial = kernels::InitModel<float>(kShape, 9);
  const Model<float> global = xmlt::testing::RandomModel<float>(kShape, 10);
  std::unique_ptr<Device> gpu = MakeDevice(CudaSpec(), initial, LimitsFor(train, kMaxRows), 0.0f);

  std::vector<uint64_t> rows;
  for (uint64_t r = test.num_rows(); r-- > 0;)
    if (r % 3 != 1) rows.push_back(r);
  const EvaluationSums actual = gpu->EvaluateRows(global, test, rows.data(), rows.size());
  const EvaluationSums expected = EvaluateRows(global, test, rows.data(), rows.size());
  EXPECT_EQ(actual.labeled_rows, expected.labeled_rows);
  EXPECT_NEAR(actual.loss_sum, expected.loss_sum, 1e-5 * std::abs(expected.loss_sum));
  EXPECT_EQ(actual.ranking.rows(), expected.ranking.rows());
  const kernels::TopKMetrics a = actual.ranking.Mean(), e = expected.ranking.Mean();
  const double one_row = 1.0 / double(rows.size()) + 1e-12;
  EXPECT_NEAR(a.p1, e.p1, one_row);
  EXPECT_NEAR(a.p3, e.p3, one_row);
  EXPECT_NEAR(a.p5, e.p5, one_row);
  EXPECT_NEAR(a.ndcg3, e.ndcg3, one_row);
  EXPECT_NEAR(a.ndcg5, e.ndcg5, one_row);

  gpu->PrepareMerge();
  EXPECT_TRUE(xmlt::testing::SameBits(gpu->HostParams(), initial.params.data(), initial.params.size()))
      << "evaluating changed the replica";
}

}  // namespace
}  // namespace xmlt::engine
