// The backward pass against central finite differences of the batch-mean loss, in double.
#include <gtest/gtest.h>

#include <cmath>

#include "kernels/cpu/softmax_loss.h"
#include "kernels/cpu/sparse_mlp.h"
#include "tests/kernels/finite_differences.h"
#include "tests/kernels/kernel_test_util.h"

namespace xmlt::kernels::cpu {
namespace {

using xmlt::testing::MeanLoss;
using xmlt::testing::NumericDerivative;

void CheckGradients(const ModelShape& shape, uint32_t rows, uint64_t seed) {
  Model<double> model = xmlt::testing::RandomModel<double>(shape, seed);
  const data::SparseBatch batch =
      xmlt::testing::RandomBatch(rows, uint32_t(shape.num_features), uint32_t(shape.num_labels), seed);
  MlpWorkspace<double> ws(shape, rows);
  Model<double> gradient = ZeroModel<double>(shape);
  StepRule<double> rule;
  rule.gradient = &gradient;
  Model<double> untouched = model;
  TrainStep(&model, batch, rule, &ws);
  ASSERT_EQ(model.params, untouched.params) << "storing the gradient must not change the model";

  const double h = 1e-6;
  double worst = 0;
  for (size_t i = 0; i < model.params.size(); ++i) {
    const double numeric = NumericDerivative(&model, batch, &ws, i, h);
    const double error = std::abs(numeric - gradient.params[i]) / std::max(1.0, std::abs(numeric));
    worst = std::max(worst, error);
    EXPECT_LT(error, 1e-6) << "parameter " << i << " of " << shape.ToString() << ": analytic "
                           << gradient.params[i] << " numeric " << numeric;
  }
  EXPECT_LT(worst, 1e-6);
}

TEST(GradientCheck, OneHiddenLayer) { CheckGradients({11, {6}, 9}, 7, 1); }

TEST(GradientCheck, TwoHiddenLayers) { CheckGradients({13, {7, 5}, 10}, 6, 2); }

TEST(GradientCheck, ThreeHiddenLayersSingleLabel) { CheckGradients({9, {4, 6, 3}, 1}, 5, 3); }

TEST(GradientCheck, OddSizesManyRows) { CheckGradients({17, {3}, 23}, 33, 4); }

TEST(GradientCheck, FirstLayerRowsOutsideTheBatchHaveZeroGradient) {
  const ModelShape shape{50, {4}, 6};
  Model<double> model = xmlt::testing::RandomModel<double>(shape, 5);
  const data::SparseBatch batch = xmlt::testing::RandomBatch(3, 50, 6, 5);
  MlpWorkspace<double> ws(shape, 3);
  Model<double> gradient = ZeroModel<double>(shape);
  StepRule<double> rule;
  rule.gradient = &gradient;
  TrainStep(&model, batch, rule, &ws);
  // Features of labeled rows get a gradient; rows without labels contribute nothing.
  std::vector<bool> present(50, false);
  for (uint32_t r = 0; r < batch.num_rows; ++r)
    if (batch.NumLabels(r) > 0)
      for (uint64_t e = batch.feature_ptr[r]; e < batch.feature_ptr[r + 1]; ++e) present[batch.feature_idx[e]] = true;
  for (uint32_t f = 0; f < 50; ++f) {
    double norm = 0;
    for (uint32_t u = 0; u < 4; ++u) norm += std::abs(gradient.Weight(0)[f * 4 + u]);
    if (present[f]) {
      EXPECT_GT(norm, 0) << "feature " << f;
    } else {
      EXPECT_EQ(norm, 0) << "feature " << f;
    }
  }
}

}  // namespace
}  // namespace xmlt::kernels::cpu
