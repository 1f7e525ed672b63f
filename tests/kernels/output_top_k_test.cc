// The shortlists' fused top-k (kernels/cpu/output_top_k.h) against a reference in double: the
// labels a row gets are its best by the double logits, within the products' rounding, in fp32 and
// in bf16; ties, NaN and k beyond the label count exactly as cpu::TopK ranks them; the same result
// on one thread as on several, over label counts that make more blocks than groups.
#include <gtest/gtest.h>
#include <tbb/global_control.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <string>
#include <vector>

#include "kernels/cpu/bf16_gemm.h"
#include "kernels/cpu/output_top_k.h"
#include "kernels/cpu/sparse_mlp.h"
#include "kernels/cpu/top_k.h"
#include "tests/kernels/kernel_test_util.h"

namespace xmlt::kernels::cpu {
namespace {

struct Case {
  Model<float> model;
  data::SparseBatch batch;
  std::vector<float> activations;  // rows x the last hidden layer
};

Case MakeCase(uint64_t labels, uint32_t rows, uint64_t seed) {
  const ModelShape shape{300, {24, 16}, labels};
  Case c{xmlt::testing::RandomModel<float>(shape, seed), xmlt::testing::RandomBatch(rows, 300, uint32_t(labels), seed),
         {}};
  std::vector<std::vector<float>> layers;
  HiddenActivations(c.model, c.batch, &layers);
  c.activations.assign(layers.back().begin(), layers.back().begin() + uint64_t(rows) * 16);
  return c;
}

float RoundedToBf16(float x) { return Bf16ToFloat(FloatToBf16(x)); }

// Row r's logits in double, from the activations and weights as the products see them.
std::vector<double> ReferenceLogits(const Case& c, uint32_t r, bool bf16) {
  const size_t last = c.model.shape.num_layers() - 1;
  const uint64_t inputs = c.model.shape.LayerInputs(last), labels = c.model.shape.num_labels;
  const auto as_product_sees = [bf16](float x) { return double(bf16 ? RoundedToBf16(x) : x); };
  std::vector<double> z(labels);
  for (uint64_t j = 0; j < labels; ++j) {
    double sum = 0;
    for (uint64_t i = 0; i < inputs; ++i)
      sum += as_product_sees(c.activations[r * inputs + i]) * as_product_sees(c.model.Weight(last)[j * inputs + i]);
    z[j] = sum + double(c.model.Bias(last)[j]);
  }
  return z;
}

// Each row's k labels are distinct, best first within the rounding, and none is beaten by a label
// left out by more than the rounding.
void ExpectBestWithinRounding(const Case& c, uint32_t k, OutputMath math, double tolerance) {
  const uint32_t rows = c.batch.num_rows;
  OutputTopKWorkspace ws(c.model.shape, rows, k, math);
  std::vector<uint32_t> labels(uint64_t(rows) * k);
  std::vector<float> scores(labels.size());
  OutputTopK(c.model, c.activations.data(), rows, labels.data(), scores.data(), &ws);
  for (uint32_t r = 0; r < rows; ++r) {
    const std::vector<double> z = ReferenceLogits(c, r, math == OutputMath::kBf16);
    std::vector<double> sorted = z;
    std::sort(sorted.begin(), sorted.end(), std::greater<double>());
    std::vector<uint32_t> row(labels.begin() + r * k, labels.begin() + (r + 1) * k);
    std::vector<uint32_t> distinct = row;
    std::sort(distinct.begin(), distinct.end());
    ASSERT_EQ(std::unique(distinct.begin(), distinct.end()), distinct.end()) << "row " << r;
    for (uint32_t i = 0; i < k; ++i) {
      const uint32_t label = row[i];
      ASSERT_LT(label, z.size());
      EXPECT_NEAR(scores[r * k + i], z[label], tolerance) << "row " << r << " place " << i;
      // The i-th place holds a label as good as the i-th best, within the rounding.
      EXPECT_GE(z[label], sorted[i] - 2 * tolerance) << "row " << r << " place " << i;
      if (i > 0) {
        EXPECT_GE(scores[r * k + i - 1], scores[r * k + i]) << "row " << r << ": the scores rise";
      }
    }
  }
}

TEST(OutputTopK, Fp32ListsAreTheDoubleReferencesBest) {
  for (uint64_t labels : {5ull, 257ull, 3000ull})
    for (uint32_t k : {1u, 5u, 50u}) {
      if (k > labels) continue;
      SCOPED_TRACE("labels " + std::to_string(labels) + " k " + std::to_string(k));
      ExpectBestWithinRounding(MakeCase(labels, 7, labels + k), k, OutputMath::kFp32, 1e-5);
    }
}

TEST(OutputTopK, Bf16ListsAreTheBestOfTheRoundedProducts) {
  std::string why;
  if (!Bf16Available(&why)) GTEST_SKIP() << why;
  for (uint64_t labels : {257ull, 3000ull})
    for (uint32_t k : {5u, 50u}) {
      SCOPED_TRACE("labels " + std::to_string(labels) + " k " + std::to_string(k));
      ExpectBestWithinRounding(MakeCase(labels, 7, labels * k), k, OutputMath::kBf16, 1e-4);
    }
}

// With the last layer's weights at zero the logits are the biases, exactly: the lists must then be
// cpu::TopK's over the biases, ties to the lower id, NaN as -infinity, and the places beyond the
// label count empty.
TEST(OutputTopK, TiesNaNsAndShortRowsAsCpuTopKRanksThem) {
  for (uint64_t labels : {3ull, 600ull, 5000ull})
    for (uint32_t k : {4u, 50u}) {
      SCOPED_TRACE("labels " + std::to_string(labels) + " k " + std::to_string(k));
      Case c = MakeCase(labels, 3, 11);
      const size_t last = c.model.shape.num_layers() - 1;
      float* w = c.model.Weight(last);
      std::fill(w, w + labels * c.model.shape.LayerInputs(last), 0.0f);
      float* bias = c.model.Bias(last);
      for (uint64_t j = 0; j < labels; ++j) bias[j] = j % 11 == 0 ? std::nanf("") : float(j % 5);
      OutputTopKWorkspace ws(c.model.shape, 3, k, OutputMath::kFp32);
      std::vector<uint32_t> labels_out(3 * k);
      std::vector<float> scores(3 * k);
      OutputTopK(c.model, c.activations.data(), 3, labels_out.data(), scores.data(), &ws);
      std::vector<float> logits(3 * labels);
      for (uint32_t r = 0; r < 3; ++r) std::copy(bias, bias + labels, logits.begin() + r * labels);
      std::vector<uint32_t> expected(3 * k);
      std::vector<float> expected_scores(3 * k);
      TopK<float>(logits.data(), 3, labels, k, expected.data(), expected_scores.data());
      EXPECT_EQ(labels_out, expected);
      EXPECT_EQ(scores, expected_scores);
    }
}

// More blocks than groups, merged over groups: one thread and two give the same lists, bit for bit.
TEST(OutputTopK, TheSameListsOnOneThreadAsOnSeveral) {
  const uint32_t rows = 64;
  Case c = MakeCase(70000, rows, 5);
  const uint32_t k = 50;
  OutputTopKWorkspace ws(c.model.shape, rows, k, OutputMath::kFp32);
  ASSERT_GT(ws.num_blocks, ws.groups);
  std::vector<uint32_t> one(rows * k), several(rows * k);
  std::vector<float> one_scores(rows * k), several_scores(rows * k);
  {
    tbb::global_control threads(tbb::global_control::max_allowed_parallelism, 1);
    OutputTopK(c.model, c.activations.data(), rows, one.data(), one_scores.data(), &ws);
  }
  OutputTopK(c.model, c.activations.data(), rows, several.data(), several_scores.data(), &ws);
  EXPECT_EQ(one, several);
  EXPECT_EQ(one_scores, several_scores);
  // And the lists are TopK's over the same products made in one piece, where no tie is near.
  ExpectBestWithinRounding(c, k, OutputMath::kFp32, 1e-5);
}

// At Amazon-670K's label count: hundreds of blocks a row, the lists merged over the groups.
TEST(OutputTopK, Table1LabelCount) {
  const Case c = MakeCase(670091, 3, 9);
  ExpectBestWithinRounding(c, 50, OutputMath::kFp32, 1e-5);
  std::string why;
  if (Bf16Available(&why)) ExpectBestWithinRounding(c, 50, OutputMath::kBf16, 1e-4);
}

TEST(OutputTopK, RefusesMoreRowsThanItsWorkspace) {
  Case c = MakeCase(100, 4, 3);
  OutputTopKWorkspace ws(c.model.shape, 2, 5, OutputMath::kFp32);
  std::vector<uint32_t> labels(20);
  EXPECT_THROW(OutputTopK(c.model, c.activations.data(), 4, labels.data(), nullptr, &ws), std::logic_error);
}

}  // namespace
}  // namespace xmlt::kernels::cpu
