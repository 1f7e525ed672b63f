// CudaMlp end to end against the CPU backend: hundreds of SGD and momentum steps from the same
// seed on the same batches, Predict's top labels and loss against the CPU forward pass, the
// bounds it enforces, and independent replicas sharing one GPU.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "kernels/cpu/softmax_loss.h"
#include "kernels/cpu/sparse_mlp.h"
#include "kernels/cpu/top_k.h"
#include "kernels/cuda/cuda_mlp.h"
#include "tests/kernels/cuda_test_gate.h"
#include "tests/kernels/kernel_test_util.h"

namespace xmlt::kernels::cuda {
namespace {

const ModelShape kShape{501, {65, 31}, 203};
constexpr uint32_t kMaxRows = 37;
constexpr uint64_t kMaxFeatureNnz = kMaxRows * 5, kMaxLabelNnz = kMaxRows * 3;

data::SparseBatch BatchFor(uint32_t step) {
  const uint32_t rows = 1 + (step * 7919u) % kMaxRows;  // 1 .. kMaxRows, varying
  return xmlt::testing::RandomBatch(rows, uint32_t(kShape.num_features), uint32_t(kShape.num_labels),
                                    1000 + step);
}

// Trajectories drift apart by rounding (different summation orders) and, rarely, a ReLU that
// flips near zero; 1e-3 of max(1, |w|) after hundreds of steps is far above the drift seen in
// float and far below any real error in a gradient or update.
void ExpectTrajectoriesMatch(float lr, float momentum, uint32_t steps) {
  Model<float> model = InitModel<float>(kShape, 42);
  Model<float> velocity = ZeroModel<float>(kShape);
  cpu::MlpWorkspace<float> ws(kShape, kMaxRows);
  cpu::StepRule<float> rule;
  rule.lr = lr;
  rule.momentum = momentum;
  rule.velocity = momentum != 0.0f ? &velocity : nullptr;

  CudaMlp gpu(0, kShape, kMaxRows, kMaxFeatureNnz, kMaxLabelNnz, /*tf32=*/false);
  gpu.UploadParams(model.params.data(), model.params.size());
  for (uint32_t step = 0; step < steps; ++step) {
    const data::SparseBatch batch = BatchFor(step);
    const cpu::LossResult expected = cpu::TrainStep(&model, batch, rule, &ws);
    const cpu::LossResult actual = gpu.TrainBatch(batch, lr, momentum);
    ASSERT_EQ(actual.labeled_rows, expected.labeled_rows) << "step " << step;
    ASSERT_NEAR(actual.loss_sum, expected.loss_sum, 1e-4 * std::max(1.0, std::abs(expected.loss_sum)))
        << "step " << step;
  }
  std::vector<float> params(model.params.size());
  gpu.DownloadParams(params.data(), params.size());
  for (size_t i = 0; i < params.size(); ++i)
    ASSERT_NEAR(params[i], model.params[i], 1e-3f * std::max(1.0f, std::abs(model.params[i])))
        << "parameter " << i;
}

TEST(CudaMlp, SgdTrainingMatchesCpuOverManySteps) {
  XMLT_SKIP_WITHOUT_GPU();
  ExpectTrajectoriesMatch(0.2f, 0.0f, 300);
}

TEST(CudaMlp, MomentumTrainingMatchesCpuOverManySteps) {
  XMLT_SKIP_WITHOUT_GPU();
  ExpectTrajectoriesMatch(0.05f, 0.9f, 200);
}

TEST(CudaMlp, PredictMatchesCpuTopKAndLoss) {
  XMLT_SKIP_WITHOUT_GPU();
  const Model<float> model = xmlt::testing::RandomModel<float>(kShape, 9);
  CudaMlp gpu(0, kShape, kMaxRows, kMaxFeatureNnz, kMaxLabelNnz, false);
  gpu.UploadParams(model.params.data(), model.params.size());
  cpu::MlpWorkspace<float> ws(kShape, kMaxRows);
  for (uint32_t k : {1u, 5u, 32u}) {
    for (uint32_t step = 0; step < 4; ++step) {
      const data::SparseBatch batch = BatchFor(step + 17 * k);
      cpu::Forward(model, batch, &ws);
      const cpu::LossResult expected = cpu::SoftmaxCrossEntropy(ws.logits.data(), batch, kShape.num_labels);
      std::vector<uint32_t> expected_top(size_t(batch.num_rows) * k);
      cpu::TopK<float>(ws.logits.data(), batch.num_rows, kShape.num_labels, k, expected_top.data(), nullptr);

      std::vector<uint32_t> top(size_t(batch.num_rows) * k);
      double loss = -1;
      uint32_t labeled = 0;
      gpu.Predict(batch, k, top.data(), &loss, &labeled);
      EXPECT_EQ(labeled, expected.labeled_rows);
      EXPECT_NEAR(loss, expected.loss_sum, 1e-5 * std::max(1.0, std::abs(expected.loss_sum)));
      for (uint32_t r = 0; r < batch.num_rows; ++r) {
        const float* z = ws.logits.data() + size_t(r) * kShape.num_labels;
        for (uint32_t i = 0; i < k; ++i) {
          const uint32_t want = expected_top[size_t(r) * k + i], got = top[size_t(r) * k + i];
          if (want == got) continue;
          // Only a near-tie may come out in the other order (the two backends round differently).
          ASSERT_LT(got, kShape.num_labels) << "row " << r << " rank " << i;
          ASSERT_NEAR(z[got], z[want], 1e-5f * std::max(1.0f, std::abs(z[want])))
              << "row " << r << " rank " << i << ": " << got << " instead of " << want;
        }
      }
    }
  }
}

TEST(CudaMlp, RejectsBatchesBeyondItsBoundsAndBadInput) {
  XMLT_SKIP_WITHOUT_GPU();
  CudaMlp gpu(0, kShape, 4, 4 * 5, 4 * 3, false);
  const data::SparseBatch too_many_rows = xmlt::testing::RandomBatch(5, 501, 203, 1);
  EXPECT_THROW(gpu.TrainBatch(too_many_rows, 0.1f, 0.0f), std::invalid_argument);
  data::SparseBatch bad_feature = xmlt::testing::RandomBatch(3, 501, 203, 2);
  bad_feature.feature_idx[0] = 501;
  EXPECT_THROW(gpu.TrainBatch(bad_feature, 0.1f, 0.0f), std::invalid_argument);
  data::SparseBatch bad_label = xmlt::testing::RandomBatch(3, 501, 203, 3);
  bad_label.label_idx[0] = 203;
  EXPECT_THROW(gpu.TrainBatch(bad_label, 0.1f, 0.0f), std::invalid_argument);
  CudaMlp tight(0, kShape, 4, 2, 1, false);
  EXPECT_THROW(tight.TrainBatch(xmlt::testing::RandomBatch(3, 501, 203, 4), 0.1f, 0.0f),
               std::invalid_argument);
  std::vector<float> wrong_size(10);
  EXPECT_THROW(gpu.UploadParams(wrong_size.data(), wrong_size.size()), std::invalid_argument);
  EXPECT_THROW(gpu.Predict(xmlt::testing::RandomBatch(3, 501, 203, 5), 33, nullptr, nullptr, nullptr),
               std::invalid_argument);
  EXPECT_THROW(CudaMlp(CudaDeviceCountOrZero(), kShape, 4, 20, 12, false), std::invalid_argument);
}

TEST(CudaMlp, ReplicasOnOneGpuAreIndependent) {
  XMLT_SKIP_WITHOUT_GPU();
  const Model<float> start = InitModel<float>(kShape, 5);
  std::vector<CudaMlp> replicas;
  for (int i = 0; i < 3; ++i) {
    replicas.emplace_back(0, kShape, kMaxRows, kMaxFeatureNnz, kMaxLabelNnz, false);
    replicas.back().UploadParams(start.params.data(), start.params.size());
  }
  // Replica 0 trains on even steps, 1 on odd ones, 2 not at all; interleaved calls.
  for (uint32_t step = 0; step < 20; ++step)
    replicas[step % 2].TrainBatch(BatchFor(step), 0.1f, step % 2 == 0 ? 0.0f : 0.9f);
  std::vector<float> idle(start.params.size());
  replicas[2].DownloadParams(idle.data(), idle.size());
  EXPECT_EQ(idle, start.params);

  // Each trained replica equals a CPU run over its own batches.
  for (uint32_t parity = 0; parity < 2; ++parity) {
    Model<float> model = start;
    Model<float> velocity = ZeroModel<float>(kShape);
    cpu::MlpWorkspace<float> ws(kShape, kMaxRows);
    cpu::StepRule<float> rule;
    rule.lr = 0.1f;
    rule.momentum = parity == 0 ? 0.0f : 0.9f;
    rule.velocity = parity == 0 ? nullptr : &velocity;
    for (uint32_t step = parity; step < 20; step += 2) cpu::TrainStep(&model, BatchFor(step), rule, &ws);
    std::vector<float> params(model.params.size());
    replicas[parity].DownloadParams(params.data(), params.size());
    for (size_t i = 0; i < params.size(); ++i)
      ASSERT_NEAR(params[i], model.params[i], 1e-4f * std::max(1.0f, std::abs(model.params[i])))
          << "replica " << parity << " parameter " << i;
  }
}

}  // namespace
}  // namespace xmlt::kernels::cuda
