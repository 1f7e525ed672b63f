// The CUDA passes of the sparse MLP against kernels::cpu on the same model and batch: forward
// activations, the stored gradient of every parameter (first-layer rows outside the batch left
// untouched), and the fused SGD and lazy-momentum updates.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "kernels/cpu/sparse_mlp.h"
#include "kernels/cuda/device_buffer.h"
#include "kernels/cuda/softmax_loss.h"
#include "kernels/cuda/sparse_mlp.h"
#include "tests/kernels/cuda_test_gate.h"
#include "tests/kernels/kernel_test_util.h"

namespace xmlt::kernels::cuda {
namespace {

// Odd sizes throughout; one hidden layer, and three of which the widest is not the first.
const ModelShape kShapes[] = {{40, {8, 5}, 12}, {1001, {129}, 37}, {300, {33, 67, 9}, 257}};

struct BatchOnDevice {
  explicit BatchOnDevice(const data::SparseBatch& batch)
      : feature_ptr(DeviceBuffer<uint64_t>::FromHost(batch.feature_ptr)),
        feature_idx(DeviceBuffer<uint32_t>::FromHost(batch.feature_idx)),
        feature_val(DeviceBuffer<float>::FromHost(batch.feature_val)),
        label_ptr(DeviceBuffer<uint64_t>::FromHost(batch.label_ptr)),
        label_idx(DeviceBuffer<uint32_t>::FromHost(batch.label_idx)) {
    view.num_rows = batch.num_rows;
    view.num_entries = batch.feature_idx.size();
    view.feature_ptr = feature_ptr.data();
    view.feature_idx = feature_idx.data();
    view.feature_val = feature_val.data();
    view.label_ptr = label_ptr.data();
    view.label_idx = label_idx.data();
    view.labeled_rows = CountLabeledRows(batch);
  }
  DeviceBuffer<uint64_t> feature_ptr;
  DeviceBuffer<uint32_t> feature_idx;
  DeviceBuffer<float> feature_val;
  DeviceBuffer<uint64_t> label_ptr;
  DeviceBuffer<uint32_t> label_idx;
  DeviceBatch view;
};

DeviceModel ViewOf(const ModelShape& shape, DeviceBuffer<float>* params) {
  DeviceModel model;
  model.shape = shape;
  model.layers = LayoutOf(shape);
  model.params = params->data();
  return model;
}

void ExpectClose(const std::vector<float>& actual, const std::vector<float>& expected,
                 double tolerance, const std::string& what) {
  ASSERT_EQ(actual.size(), expected.size()) << what;
  for (size_t i = 0; i < actual.size(); ++i)
    ASSERT_NEAR(actual[i], expected[i], tolerance * std::max(1.0f, std::abs(expected[i])))
        << what << " entry " << i;
}

void CheckForward(Math math, double tolerance) {
  CublasHandle blas;
  const CudaContext context{nullptr, blas.get(), math};
  uint64_t seed = 1;
  for (const ModelShape& shape : kShapes) {
    for (uint32_t rows : {1u, 4u, 33u}) {
      ++seed;
      const Model<float> model = xmlt::testing::RandomModel<float>(shape, seed);
      const data::SparseBatch batch = xmlt::testing::RandomBatch(rows, uint32_t(shape.num_features),
                                                                uint32_t(shape.num_labels), seed);
      cpu::MlpWorkspace<float> cpu_ws(shape, rows);
      cpu::Forward(model, batch, &cpu_ws);

      DeviceBuffer<float> params = DeviceBuffer<float>::FromHost(model.params);
      BatchOnDevice device_batch(batch);
      DeviceMlpWorkspace ws(shape, rows, batch.feature_idx.size());
      Forward(context, ViewOf(shape, &params), device_batch.view, &ws);
      XMLT_CUDA_CHECK(cudaDeviceSynchronize());
      const std::string where = shape.ToString() + " rows " + std::to_string(rows);
      for (size_t l = 0; l < shape.hidden.size(); ++l) {
        std::vector<float> act = ws.activations[l].ToHost();
        act.resize(size_t(rows) * shape.hidden[l]);
        ExpectClose(act, cpu_ws.activations[l], tolerance, where + " activations " + std::to_string(l));
      }
      std::vector<float> logits = ws.logits.ToHost();
      logits.resize(size_t(rows) * shape.num_labels);
      ExpectClose(logits, cpu_ws.logits, tolerance, where + " logits");
    }
  }
}

TEST(CudaSparseMlp, ForwardMatchesCpu) {
  XMLT_SKIP_WITHOUT_GPU();
  CheckForward(Math::kFp32, 1e-5);
}

// TF32 dense layers: ~1e-3 relative per product, compounded over up to four layers.
TEST(CudaSparseMlp, ForwardInTf32MatchesCpuWithinLooserBound) {
  XMLT_SKIP_WITHOUT_GPU();
  CheckForward(Math::kTf32, 1e-2);
}

TEST(CudaSparseMlp, GradientMatchesCpuAndSkipsAbsentFeatures) {
  XMLT_SKIP_WITHOUT_GPU();
  CublasHandle blas;
  const CudaContext context{nullptr, blas.get(), Math::kFp32};
  uint64_t seed = 100;
  for (const ModelShape& shape : kShapes) {
    for (uint32_t rows : {1u, 5u, 31u}) {
      ++seed;
      Model<float> model = xmlt::testing::RandomModel<float>(shape, seed);
      const data::SparseBatch batch = xmlt::testing::RandomBatch(rows, uint32_t(shape.num_features),
                                                                uint32_t(shape.num_labels), seed);
      DeviceBuffer<float> params = DeviceBuffer<float>::FromHost(model.params);

      Model<float> gradient = ZeroModel<float>(shape);
      cpu::MlpWorkspace<float> cpu_ws(shape, rows);
      cpu::StepRule<float> rule;
      rule.gradient = &gradient;
      const cpu::LossResult cpu_loss = cpu::TrainStep(&model, batch, rule, &cpu_ws);

      // NaN everywhere first: rows the kernel must not write stay NaN and are checked below.
      std::vector<float> poisoned(gradient.params.size(), std::nanf(""));
      DeviceBuffer<float> device_gradient = DeviceBuffer<float>::FromHost(poisoned);
      BatchOnDevice device_batch(batch);
      DeviceMlpWorkspace ws(shape, rows, batch.feature_idx.size());
      DeviceStepRule device_rule;
      device_rule.gradient = device_gradient.data();
      TrainStep(context, ViewOf(shape, &params), device_batch.view, device_rule, &ws);
      std::vector<float> actual = device_gradient.ToHost();
      const double loss = ws.loss_sum.ToHost()[0];
      const std::string where = shape.ToString() + " rows " + std::to_string(rows);
      EXPECT_NEAR(loss, cpu_loss.loss_sum, 1e-5 * std::max(1.0, std::abs(cpu_loss.loss_sum))) << where;

      std::vector<bool> present(shape.num_features, false);
      for (uint32_t f : batch.feature_idx) present[f] = true;
      const uint64_t units = shape.hidden[0];
      for (uint64_t f = 0; f < shape.num_features; ++f) {
        for (uint64_t u = 0; u < units; ++u) {
          float& value = actual[f * units + u];
          if (!present[f]) {
            ASSERT_TRUE(std::isnan(value)) << where << ": absent feature " << f << " written";
            value = 0.0f;  // as in the CPU's zeroed gradient
          }
        }
      }
      ExpectClose(actual, gradient.params, 1e-5, where + " gradient");
      // The parameters themselves are untouched in gradient mode.
      EXPECT_EQ(params.ToHost(), model.params) << where;
    }
  }
}

TEST(CudaSparseMlp, SgdAndLazyMomentumStepsMatchCpu) {
  XMLT_SKIP_WITHOUT_GPU();
  CublasHandle blas;
  const CudaContext context{nullptr, blas.get(), Math::kFp32};
  for (const ModelShape& shape : kShapes) {
    for (bool momentum : {false, true}) {
      Model<float> model = xmlt::testing::RandomModel<float>(shape, 7);
      DeviceBuffer<float> params = DeviceBuffer<float>::FromHost(model.params);
      Model<float> velocity = ZeroModel<float>(shape);
      DeviceBuffer<float> device_velocity = DeviceBuffer<float>::FromHost(velocity.params);
      cpu::StepRule<float> rule;
      rule.lr = 0.3f;
      rule.momentum = momentum ? 0.9f : 0.0f;
      rule.velocity = momentum ? &velocity : nullptr;
      DeviceStepRule device_rule;
      device_rule.lr = rule.lr;
      device_rule.momentum = rule.momentum;
      device_rule.velocity = momentum ? device_velocity.data() : nullptr;

      const uint32_t max_rows = 13;
      cpu::MlpWorkspace<float> cpu_ws(shape, max_rows);
      DeviceMlpWorkspace ws(shape, max_rows, max_rows * 5);
      for (uint32_t step = 0; step < 3; ++step) {
        const data::SparseBatch batch = xmlt::testing::RandomBatch(
            max_rows - 4 * step, uint32_t(shape.num_features), uint32_t(shape.num_labels), 50 + step);
        cpu::TrainStep(&model, batch, rule, &cpu_ws);
        BatchOnDevice device_batch(batch);
        TrainStep(context, ViewOf(shape, &params), device_batch.view, device_rule, &ws);
        XMLT_CUDA_CHECK(cudaDeviceSynchronize());
      }
      const std::string where = shape.ToString() + (momentum ? " momentum" : " sgd");
      ExpectClose(params.ToHost(), model.params, 1e-5, where + " params");
      if (momentum) ExpectClose(device_velocity.ToHost(), velocity.params, 1e-5, where + " velocity");
    }
  }
}

// Widths past the launch grids' reach: more than 65,535 groups of 128 first-layer units (gridDim.y
// is at most 65,535) and more than 2^24 labels (the element-wise grids stop at 2^16 blocks of 256),
// so that every unit and every label bias is reached only by striding.
TEST(CudaSparseMlp, FirstLayerWiderThanOneGridRowMatchesCpu) {
  XMLT_SKIP_WITHOUT_GPU();
  CublasHandle blas;
  const CudaContext context{nullptr, blas.get(), Math::kFp32};
  const ModelShape shape{3, {65535 * 128 + 130}, 2};
  const uint32_t rows = 3;
  const Model<float> model = xmlt::testing::RandomModel<float>(shape, 11);
  const data::SparseBatch batch = xmlt::testing::RandomBatch(rows, 3, 2, 11);
  cpu::MlpWorkspace<float> cpu_ws(shape, rows);
  cpu::Forward(model, batch, &cpu_ws);

  DeviceBuffer<float> params = DeviceBuffer<float>::FromHost(model.params);
  BatchOnDevice device_batch(batch);
  DeviceMlpWorkspace ws(shape, rows, batch.feature_idx.size());
  Forward(context, ViewOf(shape, &params), device_batch.view, &ws);
  XMLT_CUDA_CHECK(cudaDeviceSynchronize());
  std::vector<float> act = ws.activations[0].ToHost();
  act.resize(size_t(rows) * shape.hidden[0]);
  ExpectClose(act, cpu_ws.activations[0], 1e-5, "activations");
}

TEST(CudaSparseMlp, BiasGradientPast2To24LabelsMatchesCpu) {
  XMLT_SKIP_WITHOUT_GPU();
  CublasHandle blas;
  const CudaContext context{nullptr, blas.get(), Math::kFp32};
  const ModelShape shape{3, {2}, (uint64_t{1} << 24) + 37};
  const uint32_t rows = 3;
  Model<float> model = xmlt::testing::RandomModel<float>(shape, 12);
  const data::SparseBatch batch =
      xmlt::testing::RandomBatch(rows, 3, uint32_t(shape.num_labels), 12);
  DeviceBuffer<float> params = DeviceBuffer<float>::FromHost(model.params);
  Model<float> gradient = ZeroModel<float>(shape);
  cpu::MlpWorkspace<float> cpu_ws(shape, rows);
  cpu::StepRule<float> rule;
  rule.gradient = &gradient;
  cpu::TrainStep(&model, batch, rule, &cpu_ws);

  // NaN first: a label whose bias the kernel never reaches stays NaN.
  DeviceBuffer<float> device_gradient =
      DeviceBuffer<float>::FromHost(std::vector<float>(gradient.params.size(), std::nanf("")));
  BatchOnDevice device_batch(batch);
  DeviceMlpWorkspace ws(shape, rows, batch.feature_idx.size());
  DeviceStepRule device_rule;
  device_rule.gradient = device_gradient.data();
  TrainStep(context, ViewOf(shape, &params), device_batch.view, device_rule, &ws);
  const std::vector<float> actual = device_gradient.ToHost();
  const TensorView& bias = gradient.layers.back().bias;
  ExpectClose(std::vector<float>(actual.begin() + bias.offset,
                                 actual.begin() + bias.offset + bias.size()),
              std::vector<float>(gradient.params.begin() + bias.offset,
                                 gradient.params.begin() + bias.offset + bias.size()),
              1e-5, "output bias gradient");
}

}  // namespace
}  // namespace xmlt::kernels::cuda
