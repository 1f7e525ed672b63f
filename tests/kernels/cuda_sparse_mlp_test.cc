// The CUDA passes of the sparse MLP against kernels::cpu on the same model and batch: forward
// activations, the stored gradient of every parameter (first-layer rows outside the batch left
// untouched), also for a batch whose first-layer sort spans many of CUB's tiles, and the fused SGD
// and lazy-momentum updates, with dropout and the first layer's Adagrad too.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
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

// One step's gradient and loss on the CPU (the reference).
struct Gradient {
  Model<float> gradient;
  double loss = 0;
};
Gradient CpuGradient(Model<float>* model, const data::SparseBatch& batch) {
  Gradient out{ZeroModel<float>(model->shape), 0};
  cpu::MlpWorkspace<float> ws(model->shape, batch.num_rows);
  cpu::StepRule<float> rule;
  rule.gradient = &out.gradient;
  out.loss = cpu::TrainStep(model, batch, rule, &ws).loss_sum;
  return out;
}

// The same on the GPU, in gradient mode, into a buffer filled with NaN first: entries the kernel
// must not write (rows of features outside the batch) stay NaN.
struct DeviceGradient {
  std::vector<float> values;
  double loss = 0;
};
DeviceGradient GpuGradient(const CudaContext& context, const ModelShape& shape, DeviceBuffer<float>* params,
                           const data::SparseBatch& batch) {
  DeviceBuffer<float> gradient =
      DeviceBuffer<float>::FromHost(std::vector<float>(shape.NumParameters(), std::nanf("")));
  BatchOnDevice device_batch(batch);
  DeviceMlpWorkspace ws(shape, batch.num_rows, batch.feature_idx.size());
  DeviceStepRule rule;
  rule.gradient = gradient.data();
  TrainStep(context, ViewOf(shape, params), device_batch.view, rule, &ws);
  XMLT_CUDA_CHECK(cudaDeviceSynchronize());
  return {gradient.ToHost(), ws.loss_sum.ToHost()[0]};
}

// The first layer's rows of features absent from the batch must be unwritten (NaN); they are
// zeroed then, as in the CPU's gradient, for the comparison of the rest.
void ExpectAbsentFeaturesUnwritten(const ModelShape& shape, const data::SparseBatch& batch,
                                   std::vector<float>* gradient, const std::string& where) {
  std::vector<bool> present(shape.num_features, false);
  for (uint32_t f : batch.feature_idx) present[f] = true;
  const uint64_t units = shape.hidden[0];
  for (uint64_t f = 0; f < shape.num_features; ++f) {
    if (present[f]) continue;
    for (uint64_t u = 0; u < units; ++u) {
      float& value = (*gradient)[f * units + u];
      ASSERT_TRUE(std::isnan(value)) << where << ": absent feature " << f << " written";
      value = 0.0f;
    }
  }
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
      ExpectClose(logits, std::vector<float>(cpu_ws.logits.begin(), cpu_ws.logits.end()), tolerance, where + " logits");
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
      const Gradient expected = CpuGradient(&model, batch);
      DeviceGradient actual = GpuGradient(context, shape, &params, batch);
      const std::string where = shape.ToString() + " rows " + std::to_string(rows);
      EXPECT_NEAR(actual.loss, expected.loss, 1e-5 * std::max(1.0, std::abs(expected.loss))) << where;
      ASSERT_NO_FATAL_FAILURE(ExpectAbsentFeaturesUnwritten(shape, batch, &actual.values, where));
      ExpectClose(actual.values, expected.gradient.params, 1e-5, where + " gradient");
      // The parameters themselves are untouched in gradient mode.
      EXPECT_EQ(params.ToHost(), model.params) << where;
    }
  }
}

// A batch of `rows` rows of `per_row` distinct features each (rows 1 and rows / 2 empty), drawn so
// that features repeat across rows: features 0 and num_features - 1 (the two ends of the sort's
// key range) are in every non-empty row, a third of each row comes from 1,024 hot features (each
// in about 65 rows), and the rest is uniform. Labels as in RandomBatch: 1 to 3, none in row 2.
data::SparseBatch ManyRepeatedFeaturesBatch(uint32_t rows, uint32_t per_row, uint32_t num_features,
                                            uint32_t num_labels, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<uint32_t> hot(1024);
  for (uint32_t& f : hot) f = uint32_t(rng() % num_features);
  std::vector<char> taken(num_features, 0);
  data::SparseBatch batch;
  for (uint32_t r = 0; r < rows; ++r) {
    std::vector<uint32_t> ids;
    if (r != 1 && r != rows / 2) {
      auto add = [&](uint32_t f) {
        if (taken[f]) return;
        taken[f] = 1;
        ids.push_back(f);
      };
      add(0);
      add(num_features - 1);
      while (ids.size() < per_row / 3) add(hot[rng() % hot.size()]);
      while (ids.size() < per_row) add(uint32_t(rng() % num_features));
      for (uint32_t f : ids) taken[f] = 0;
      std::sort(ids.begin(), ids.end());
    }
    xmlt::testing::AppendFeatureRow(ids, rng, &batch);
    xmlt::testing::AppendLabelRow(r == 2 ? 0 : 1 + uint32_t(rng() % 3), num_labels, rng, &batch);
  }
  batch.num_rows = rows;
  return batch;
}

// The first layer's gradient sorts the batch's (feature, entry) pairs with CUB's radix sort. The
// batches above hold at most 155 entries: one tile, CUB's single-tile path. Here 201,600 entries
// over 128 rows (dozens of tiles, and 17-bit keys: several digit passes), with 41,000 features
// repeated across rows, some in 126 rows: a run of equal features crosses tile boundaries, and the
// gradient is right only if the sort is stable across tiles (each run reduced in ascending entry
// order, as the CPU does) and every run is found once. 260 units: more than one block of threads
// (256), so each thread of the gradient kernel also strides over units.
TEST(CudaSparseMlp, GradientOfBatchSpanningManySortTilesMatchesCpu) {
  XMLT_SKIP_WITHOUT_GPU();
  CublasHandle blas;
  const CudaContext context{nullptr, blas.get(), Math::kFp32};
  const ModelShape shape{70001, {260, 24}, 41};
  const uint32_t rows = 128;
  Model<float> model = xmlt::testing::RandomModel<float>(shape, 17);
  const data::SparseBatch batch =
      ManyRepeatedFeaturesBatch(rows, 1600, uint32_t(shape.num_features), uint32_t(shape.num_labels), 17);
  ASSERT_EQ(batch.feature_idx.size(), 126u * 1600u);

  DeviceBuffer<float> params = DeviceBuffer<float>::FromHost(model.params);
  const Gradient expected = CpuGradient(&model, batch);
  DeviceGradient actual = GpuGradient(context, shape, &params, batch);
  EXPECT_NEAR(actual.loss, expected.loss, 1e-5 * std::max(1.0, std::abs(expected.loss)));
  ASSERT_NO_FATAL_FAILURE(ExpectAbsentFeaturesUnwritten(shape, batch, &actual.values, "many sort tiles"));
  // The CPU's own rounding (fp32 against fp64) is below 1e-6 of max(1, |g|) for every entry here;
  // a run reduced twice, split, or read with another entry's row is off by a whole x * delta
  // (1e-4 and more). The first layer's entries are below 0.07, so 1e-5 is an absolute bound there.
  ExpectClose(actual.values, expected.gradient.params, 1e-5, "gradient");
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

// Dropout on every hidden layer and the first layer's Adagrad, as the CPU's step under the same
// rule: the same masks (one hash on both), the same squares in the velocity's first layer, with
// and without momentum on the other layers, over steps that revisit features.
TEST(CudaSparseMlp, DropoutAndFirstLayerAdagradStepsMatchCpu) {
  XMLT_SKIP_WITHOUT_GPU();
  CublasHandle blas;
  const CudaContext context{nullptr, blas.get(), Math::kFp32};
  for (const ModelShape& shape : kShapes) {
    for (bool momentum : {false, true}) {
      Model<float> model = xmlt::testing::RandomModel<float>(shape, 9);
      DeviceBuffer<float> params = DeviceBuffer<float>::FromHost(model.params);
      Model<float> velocity = ZeroModel<float>(shape);
      DeviceBuffer<float> device_velocity = DeviceBuffer<float>::FromHost(velocity.params);
      cpu::StepRule<float> rule;
      rule.lr = 0.3f;
      rule.momentum = momentum ? 0.9f : 0.0f;
      rule.velocity = &velocity;
      rule.input_adagrad = true;
      rule.input_lr = 0.1f;
      rule.dropout = 0.4f;
      DeviceStepRule device_rule;
      device_rule.lr = rule.lr;
      device_rule.momentum = rule.momentum;
      device_rule.velocity = device_velocity.data();
      device_rule.input_adagrad = true;
      device_rule.input_lr = rule.input_lr;
      device_rule.dropout = rule.dropout;

      const uint32_t max_rows = 13;
      cpu::MlpWorkspace<float> cpu_ws(shape, max_rows);
      DeviceMlpWorkspace ws(shape, max_rows, max_rows * 5);
      for (uint32_t step = 0; step < 3; ++step) {
        rule.dropout_key = device_rule.dropout_key = 1000 + step;
        const data::SparseBatch batch = xmlt::testing::RandomBatch(
            max_rows - 4 * step, uint32_t(shape.num_features), uint32_t(shape.num_labels), 60 + step);
        cpu::TrainStep(&model, batch, rule, &cpu_ws);
        BatchOnDevice device_batch(batch);
        TrainStep(context, ViewOf(shape, &params), device_batch.view, device_rule, &ws);
        XMLT_CUDA_CHECK(cudaDeviceSynchronize());
        // The masks: the training activations agree, dropped units included.
        for (size_t l = 0; l < shape.hidden.size(); ++l) {
          std::vector<float> act = ws.activations[l].ToHost();
          act.resize(size_t(batch.num_rows) * shape.hidden[l]);
          const std::vector<float> expected(cpu_ws.activations[l].begin(),
                                            cpu_ws.activations[l].begin() + int64_t(act.size()));
          ExpectClose(act, expected, 1e-5, shape.ToString() + " dropped activations");
        }
      }
      const std::string where = shape.ToString() + (momentum ? " momentum" : " sgd") + " + Adagrad, dropout";
      ExpectClose(params.ToHost(), model.params, 1e-5, where + " params");
      ExpectClose(device_velocity.ToHost(), velocity.params, 1e-5, where + " velocity and squares");
      // Not a test of an unused rule: the squares moved and dropout zeroed units.
      const std::vector<float> squares = device_velocity.ToHost();
      EXPECT_GT(*std::max_element(squares.begin(), squares.begin() + int64_t(model.layers[0].weight.size())), 0.0f)
          << where;
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
  const Model<float> gradient = CpuGradient(&model, batch).gradient;
  // Over NaN: a label whose bias the kernel never reaches stays NaN.
  const std::vector<float> actual = GpuGradient(context, shape, &params, batch).values;
  const TensorView& bias = gradient.layers.back().bias;
  ExpectClose(std::vector<float>(actual.begin() + bias.offset,
                                 actual.begin() + bias.offset + bias.size()),
              std::vector<float>(gradient.params.begin() + bias.offset,
                                 gradient.params.begin() + bias.offset + bias.size()),
              1e-5, "output bias gradient");
}

}  // namespace
}  // namespace xmlt::kernels::cuda
