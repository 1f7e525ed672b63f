// Row subsets; see row_subset.h.
#include "data/row_subset.h"

#include <stdexcept>
#include <string>

namespace xmlt::data {
namespace {

CsrMatrix SelectCsrRows(const CsrMatrix& m, const std::vector<uint64_t>& rows) {
  std::vector<uint64_t> row_ptr{0};
  row_ptr.reserve(rows.size() + 1);
  for (uint64_t r : rows) {
    if (r >= m.num_rows)
      throw std::out_of_range("row " + std::to_string(r) + " of a matrix of " + std::to_string(m.num_rows));
    row_ptr.push_back(row_ptr.back() + m.RowSize(r));
  }
  std::vector<uint32_t> col_idx;
  std::vector<float> values;
  col_idx.reserve(row_ptr.back());
  if (!m.binary()) values.reserve(row_ptr.back());
  for (uint64_t r : rows) {
    col_idx.insert(col_idx.end(), m.col_idx.begin() + m.RowBegin(r), m.col_idx.begin() + m.RowEnd(r));
    if (!m.binary()) values.insert(values.end(), m.values.begin() + m.RowBegin(r), m.values.begin() + m.RowEnd(r));
  }
  CsrMatrix out;
  out.num_rows = rows.size();
  out.num_cols = m.num_cols;
  out.row_ptr = SharedArray<uint64_t>(std::move(row_ptr));
  out.col_idx = SharedArray<uint32_t>(std::move(col_idx));
  out.values = SharedArray<float>(std::move(values));
  return out;
}

}  // namespace

Dataset SelectRows(const Dataset& dataset, const std::vector<uint64_t>& rows) {
  Dataset out;
  out.features = SelectCsrRows(dataset.features, rows);
  out.labels = SelectCsrRows(dataset.labels, rows);
  out.source = dataset.source;
  return out;
}

}  // namespace xmlt::data
