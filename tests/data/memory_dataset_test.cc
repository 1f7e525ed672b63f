// Datasets from CSR arrays in memory (the Python package's input): borrowed when already in the
// readers' form, otherwise read as the text reader reads the same rows; refused as it refuses them.
#include "data/memory_dataset.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "data/input_error.h"
#include "data/text_reader.h"

namespace xmlt::data {
namespace {

template <class T>
std::vector<T> Values(const SharedArray<T>& a) {
  return std::vector<T>(a.begin(), a.end());
}

CsrArrays Arrays(uint64_t cols, const std::vector<uint64_t>& indptr, const std::vector<uint32_t>& indices,
                 const std::vector<float>& values) {
  CsrArrays a;
  a.num_rows = indptr.size() - 1;
  a.num_cols = cols;
  a.indptr = indptr.data();
  a.indices = indices.data();
  a.values = values.empty() ? nullptr : values.data();
  return a;
}

TEST(MemoryDataset, SortedRowsAreBorrowedNotCopied) {
  const std::vector<uint64_t> indptr = {0, 2, 3};
  const std::vector<uint32_t> indices = {1, 4, 0};
  const std::vector<float> values = {0.5f, 2.f, 1.f};
  const CsrMatrix m = FeaturesFromArrays(Arrays(5, indptr, indices, values), "X");
  EXPECT_EQ(m.row_ptr.data(), indptr.data());
  EXPECT_EQ(m.col_idx.data(), indices.data());
  EXPECT_EQ(m.values.data(), values.data());
  EXPECT_EQ(m.num_rows, 2u);
  EXPECT_EQ(m.num_cols, 5u);
}

TEST(MemoryDataset, UnsortedAndRepeatedIdsAreReadAsTheTextReaderReadsThem) {
  // Row 0: ids 4, 1, 4 (summed in order), row 1: labels 2, 0, 2.
  const std::vector<uint64_t> indptr = {0, 3, 4};
  const std::vector<uint32_t> features = {4, 1, 4, 3};
  const std::vector<float> values = {0.1f, 0.5f, 0.7f, 1.f};
  const std::vector<uint64_t> label_ptr = {0, 1, 4};
  const std::vector<uint32_t> labels = {1, 2, 0, 2};
  const std::vector<float> ones(4, 1.f);
  const Dataset memory = DatasetFromMatrices(FeaturesFromArrays(Arrays(5, indptr, features, values), "X"),
                                             LabelsFromArrays(Arrays(3, label_ptr, labels, ones), "Y"), "X", "Y");
  const Dataset text = ParseLabeledText("2 5 3\n1 4:0.1 1:0.5 4:0.7\n2,0,2 3:1\n", "t.txt", LoadOptions{});
  EXPECT_EQ(Values(memory.features.row_ptr), Values(text.features.row_ptr));
  EXPECT_EQ(Values(memory.features.col_idx), Values(text.features.col_idx));
  EXPECT_EQ(Values(memory.features.values), Values(text.features.values));
  EXPECT_EQ(Values(memory.labels.row_ptr), Values(text.labels.row_ptr));
  EXPECT_EQ(Values(memory.labels.col_idx), Values(text.labels.col_idx));
  EXPECT_TRUE(memory.labels.binary());
}

void ExpectRefused(const CsrArrays& a, bool labels, const std::string& message) {
  try {
    if (labels) {
      LabelsFromArrays(a, "Y");
    } else {
      FeaturesFromArrays(a, "X");
    }
    ADD_FAILURE() << "accepted; expected: " << message;
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()), message);
  }
}

TEST(MemoryDataset, RefusesWhatTheReadersRefuse) {
  const std::vector<uint64_t> indptr = {0, 1, 2};
  const std::vector<uint32_t> indices = {0, 1};
  ExpectRefused(Arrays(2, indptr, indices, {1.f, std::nanf("")}), false,
                "X: row 1: the value of feature id 1 is NaN or infinite");
  ExpectRefused(Arrays(2, indptr, indices, {std::numeric_limits<float>::infinity(), 1.f}), false,
                "X: row 0: the value of feature id 0 is NaN or infinite");
  ExpectRefused(Arrays(1, indptr, indices, {1.f, 1.f}), true, "Y: row 1: label id 1 is beyond the 1 labels");
  ExpectRefused(Arrays(2, indptr, indices, {1.f, 0.f}), true,
                "Y: row 1: label id 1 has the value 0.000000; a label matrix holds only 1s");
  ExpectRefused(Arrays(2, {0, 2, 1}, {0, 1}, {1.f, 1.f}), false, "X: malformed CSR arrays: indptr decreases at row 1");
  ExpectRefused(Arrays(2, {1, 2, 2}, {0, 1}, {1.f, 1.f}), false, "X: malformed CSR arrays: indptr must start at 0");
  const float big = std::numeric_limits<float>::max();
  ExpectRefused(Arrays(2, {0, 2}, {1, 1}, {big, big}), false,
                "X: row 0: the values of repeated feature id 1 sum beyond float range");
}

TEST(MemoryDataset, RowCountsMustAgree) {
  const std::vector<uint64_t> two = {0, 1, 2}, one = {0, 1};
  const std::vector<uint32_t> ids = {0, 0};
  const std::vector<float> ones = {1.f, 1.f};
  try {
    DatasetFromMatrices(FeaturesFromArrays(Arrays(1, two, ids, ones), "X"),
                        LabelsFromArrays(Arrays(1, one, ids, ones), "Y"), "X", "Y");
    ADD_FAILURE() << "accepted";
  } catch (const InputError& e) {
    EXPECT_STREQ(e.what(), "X: has 2 rows but Y has 1");
  }
}

}  // namespace
}  // namespace xmlt::data
