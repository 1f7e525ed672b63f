// Row subsets keep each chosen row's features, values and labels, in the order asked.
#include "data/row_subset.h"

#include <gtest/gtest.h>

#include <stdexcept>
#include <vector>

namespace xmlt::data {
namespace {

CsrMatrix Csr(uint64_t cols, const std::vector<std::vector<uint32_t>>& rows, bool with_values) {
  std::vector<uint64_t> ptr{0};
  std::vector<uint32_t> idx;
  std::vector<float> values;
  for (const auto& row : rows) {
    for (uint32_t c : row) {
      idx.push_back(c);
      if (with_values) values.push_back(float(c) + 0.5f);
    }
    ptr.push_back(idx.size());
  }
  CsrMatrix m;
  m.num_rows = rows.size();
  m.num_cols = cols;
  m.row_ptr = SharedArray<uint64_t>(std::move(ptr));
  m.col_idx = SharedArray<uint32_t>(std::move(idx));
  m.values = SharedArray<float>(std::move(values));
  return m;
}

TEST(RowSubset, KeepsTheChosenRowsInOrderWithRepeats) {
  Dataset d;
  d.features = Csr(10, {{1, 4}, {}, {0, 2, 9}}, true);
  d.labels = Csr(5, {{3}, {0, 1}, {}}, false);
  d.source = "three.txt";
  const Dataset s = SelectRows(d, {2, 0, 2, 1});
  ASSERT_EQ(s.num_rows(), 4u);
  EXPECT_EQ(s.num_features(), 10u);
  EXPECT_EQ(s.num_labels(), 5u);
  EXPECT_EQ(s.source, "three.txt");
  EXPECT_EQ(std::vector<uint64_t>(s.features.row_ptr.begin(), s.features.row_ptr.end()),
            (std::vector<uint64_t>{0, 3, 5, 8, 8}));
  EXPECT_EQ(std::vector<uint32_t>(s.features.col_idx.begin(), s.features.col_idx.end()),
            (std::vector<uint32_t>{0, 2, 9, 1, 4, 0, 2, 9}));
  EXPECT_EQ(std::vector<float>(s.features.values.begin(), s.features.values.end()),
            (std::vector<float>{0.5f, 2.5f, 9.5f, 1.5f, 4.5f, 0.5f, 2.5f, 9.5f}));
  EXPECT_TRUE(s.labels.binary());
  EXPECT_EQ(std::vector<uint32_t>(s.labels.col_idx.begin(), s.labels.col_idx.end()),
            (std::vector<uint32_t>{3, 0, 1}));
  EXPECT_EQ(SelectRows(d, {}).num_rows(), 0u);
  EXPECT_THROW(SelectRows(d, {0, 3}), std::out_of_range);
}

}  // namespace
}  // namespace xmlt::data
