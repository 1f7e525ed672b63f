// The checks a batch passes before device kernels index it unchecked: each refusal names what is
// wrong, and a well-formed batch (rows without features or labels included) passes.
#include "kernels/batch_checks.h"

#include <gtest/gtest.h>

#include <stdexcept>
#include <string>

#include "tests/kernels/kernel_test_util.h"

namespace xmlt::kernels {
namespace {

constexpr uint64_t kFeatures = 50, kLabels = 20;

// The message of the refusal of `batch`, or "" when it passes.
std::string Refusal(const data::SparseBatch& batch) {
  try {
    CheckBatchForModel(batch, kFeatures, kLabels, "Device");
    return "";
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
}

TEST(BatchChecks, AWellFormedBatchPasses) {
  EXPECT_EQ(Refusal(xmlt::testing::RandomBatch(9, kFeatures, kLabels, 1)), "");
  EXPECT_EQ(Refusal(data::SparseBatch{}), "");  // no rows
}

TEST(BatchChecks, ARepeatedOrUnsortedLabelInARowIsRefused) {
  data::SparseBatch batch = xmlt::testing::RandomBatch(4, kFeatures, kLabels, 2);
  // Row 3 gets labels {5, 5}: a repeated label, which the softmax's gradient would write twice.
  batch.label_idx.resize(batch.label_ptr[3]);
  batch.label_idx.insert(batch.label_idx.end(), {5, 5});
  batch.label_ptr[4] = batch.label_idx.size();
  EXPECT_EQ(Refusal(batch), "Device: the labels of row 3 are not strictly increasing (5 then 5)");
  batch.label_idx.back() = 4;
  EXPECT_EQ(Refusal(batch), "Device: the labels of row 3 are not strictly increasing (5 then 4)");
  batch.label_idx.back() = 6;
  EXPECT_EQ(Refusal(batch), "");
  // The same label in two rows is fine: row 0's labels become 5, 6, ...
  for (uint64_t i = batch.label_ptr[0]; i < batch.label_ptr[1]; ++i) batch.label_idx[i] = uint32_t(5 + i);
  ASSERT_LT(batch.label_ptr[0], batch.label_ptr[1]);
  EXPECT_EQ(Refusal(batch), "");
}

TEST(BatchChecks, OffsetsIdsAndValuesAreChecked) {
  const data::SparseBatch good = xmlt::testing::RandomBatch(5, kFeatures, kLabels, 3);
  data::SparseBatch b = good;
  b.feature_idx[0] = kFeatures;
  EXPECT_EQ(Refusal(b), "Device: feature id 50 out of range (50)");
  b = good;
  b.label_idx.back() = kLabels + 3;
  EXPECT_EQ(Refusal(b), "Device: label id 23 out of range (20)");
  b = good;
  b.feature_val.pop_back();
  EXPECT_EQ(Refusal(b), "Device: feature_val and feature_idx differ in size");
  b = good;
  b.label_ptr.pop_back();
  EXPECT_EQ(Refusal(b), "Device: label_ptr has 5 entries for 5 rows");
  b = good;
  b.feature_ptr[0] = 1;
  EXPECT_EQ(Refusal(b), "Device: feature_ptr does not span [0, nnz]");
  b = good;
  std::swap(b.feature_ptr[1], b.feature_ptr[3]);  // still ends at nnz, but decreases
  EXPECT_NE(Refusal(b).find("feature_ptr decreases at row"), std::string::npos) << Refusal(b);
}

}  // namespace
}  // namespace xmlt::kernels
