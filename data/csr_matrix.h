// Compressed sparse rows: the layout of both the feature matrix and the label matrix.
#pragma once

#include <cstdint>

#include "data/shared_array.h"

namespace xmlt::data {

struct CsrMatrix {
  uint64_t num_rows = 0;
  uint64_t num_cols = 0;
  SharedArray<uint64_t> row_ptr;  // num_rows + 1 offsets into col_idx / values
  SharedArray<uint32_t> col_idx;  // sorted and unique within a row
  SharedArray<float> values;      // empty for label matrices: every stored entry is 1

  uint64_t nnz() const { return col_idx.size(); }
  uint64_t RowBegin(uint64_t r) const { return row_ptr[r]; }
  uint64_t RowEnd(uint64_t r) const { return row_ptr[r + 1]; }
  uint64_t RowSize(uint64_t r) const { return row_ptr[r + 1] - row_ptr[r]; }
  bool binary() const { return values.empty(); }
};

}  // namespace xmlt::data
