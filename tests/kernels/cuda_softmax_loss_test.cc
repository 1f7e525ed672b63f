// The fused softmax cross-entropy kernel against cpu::SoftmaxCrossEntropy(Backward): gradient,
// loss, rows without labels, and a loss that is the same on every run.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "kernels/cpu/softmax_loss.h"
#include "kernels/cuda/device_buffer.h"
#include "kernels/cuda/softmax_loss.h"
#include "tests/kernels/cuda_test_gate.h"
#include "tests/kernels/kernel_test_util.h"

namespace xmlt::kernels::cuda {
namespace {

struct LabelsOnDevice {
  explicit LabelsOnDevice(const data::SparseBatch& batch)
      : ptr(DeviceBuffer<uint64_t>::FromHost(batch.label_ptr)),
        idx(DeviceBuffer<uint32_t>::FromHost(batch.label_idx)) {}
  DeviceBuffer<uint64_t> ptr;
  DeviceBuffer<uint32_t> idx;
};

std::vector<float> RandomLogits(size_t count, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> normal(0.0f, 3.0f);
  std::vector<float> logits(count);
  for (float& z : logits) z = normal(rng);
  return logits;
}

TEST(CudaSoftmaxLoss, BackwardMatchesCpu) {
  XMLT_SKIP_WITHOUT_GPU();
  for (uint32_t rows : {1u, 3u, 9u, 37u}) {
    for (uint64_t labels : {1ull, 5ull, 257ull, 1003ull}) {
      const data::SparseBatch batch = xmlt::testing::RandomBatch(rows, 50, uint32_t(labels), rows * 7 + labels);
      const std::vector<float> logits = RandomLogits(rows * labels, rows + labels);
      std::vector<float> expected = logits;
      const cpu::LossResult cpu_loss = cpu::SoftmaxCrossEntropyBackward<float>(expected.data(), batch, labels);

      const uint32_t labeled = CountLabeledRows(batch);
      ASSERT_EQ(labeled, cpu_loss.labeled_rows);
      LabelsOnDevice device_labels(batch);
      DeviceBuffer<float> z = DeviceBuffer<float>::FromHost(logits);
      DeviceBuffer<double> row_loss(rows), loss(1);
      SoftmaxCrossEntropyBackward(z.data(), rows, labels, device_labels.ptr.data(),
                                  device_labels.idx.data(), labeled, row_loss.data(), loss.data(),
                                  nullptr);
      const std::vector<float> gradient = z.ToHost();
      const double loss_sum = loss.ToHost()[0];
      EXPECT_NEAR(loss_sum, cpu_loss.loss_sum, 1e-5 * std::max(1.0, std::abs(cpu_loss.loss_sum)))
          << "rows " << rows << " labels " << labels;
      // Relative to the entry, plus a sliver of the scale 1/labeled for the target entries,
      // where p - 1/|Y| may cancel.
      const double scale = labeled > 0 ? 1.0 / labeled : 0.0;
      for (size_t i = 0; i < gradient.size(); ++i)
        ASSERT_NEAR(gradient[i], expected[i], 1e-5 * std::abs(expected[i]) + 1e-7 * scale)
            << "rows " << rows << " labels " << labels << " entry " << i;
    }
  }
}

TEST(CudaSoftmaxLoss, LossAloneMatchesCpuAndLeavesLogits) {
  XMLT_SKIP_WITHOUT_GPU();
  const uint32_t rows = 23;
  const uint64_t labels = 517;
  const data::SparseBatch batch = xmlt::testing::RandomBatch(rows, 50, labels, 3);
  const std::vector<float> logits = RandomLogits(rows * labels, 4);
  const cpu::LossResult expected = cpu::SoftmaxCrossEntropy<float>(logits.data(), batch, labels);
  LabelsOnDevice device_labels(batch);
  DeviceBuffer<float> z = DeviceBuffer<float>::FromHost(logits);
  DeviceBuffer<double> row_loss(rows), loss(1);
  SoftmaxCrossEntropy(z.data(), rows, labels, device_labels.ptr.data(), device_labels.idx.data(),
                      row_loss.data(), loss.data(), nullptr);
  EXPECT_NEAR(loss.ToHost()[0], expected.loss_sum, 1e-5 * std::abs(expected.loss_sum));
  EXPECT_EQ(z.ToHost(), logits);
}

TEST(CudaSoftmaxLoss, LossIsTheSameOnEveryRun) {
  XMLT_SKIP_WITHOUT_GPU();
  const uint32_t rows = 301;
  const uint64_t labels = 129;
  const data::SparseBatch batch = xmlt::testing::RandomBatch(rows, 50, labels, 5);
  const std::vector<float> logits = RandomLogits(rows * labels, 6);
  LabelsOnDevice device_labels(batch);
  DeviceBuffer<double> row_loss(rows), loss(1);
  double first = 0;
  for (int run = 0; run < 5; ++run) {
    DeviceBuffer<float> z = DeviceBuffer<float>::FromHost(logits);
    SoftmaxCrossEntropyBackward(z.data(), rows, labels, device_labels.ptr.data(),
                                device_labels.idx.data(), CountLabeledRows(batch), row_loss.data(),
                                loss.data(), nullptr);
    const double value = loss.ToHost()[0];
    if (run == 0) first = value;
    ASSERT_EQ(value, first) << "run " << run;
  }
}

}  // namespace
}  // namespace xmlt::kernels::cuda
