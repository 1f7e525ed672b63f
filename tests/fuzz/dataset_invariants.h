// What every reader promises about a Dataset it accepts, checked after each accepted fuzz input;
// the trainer indexes with these arrays unchecked. A violation aborts, so libFuzzer and the
// regression runner report it like a crash.
#pragma once

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <string>

#include "data/dataset.h"

namespace xmlt::fuzz {

[[noreturn]] inline void Violation(const std::string& what) {
  std::fprintf(stderr, "fuzz invariant violated: %s\n", what.c_str());
  std::abort();
}

inline void CheckCsr(const data::CsrMatrix& m, const std::string& name) {
  if (m.num_cols > std::numeric_limits<uint32_t>::max())
    Violation(name + ": more than 2^32-1 columns");
  if (m.row_ptr.size() != m.num_rows + 1) Violation(name + ": row_ptr is not num_rows + 1 long");
  if (m.row_ptr[0] != 0 || m.row_ptr[m.num_rows] != m.nnz()) {
    Violation(name + ": row_ptr does not run from 0 to nnz");
  }
  if (!m.values.empty() && m.values.size() != m.nnz())
    Violation(name + ": values are not nnz long");
  for (uint64_t r = 0; r < m.num_rows; ++r) {
    if (m.RowBegin(r) > m.RowEnd(r))
      Violation(name + ": row_ptr decreases at row " + std::to_string(r));
    for (uint64_t i = m.RowBegin(r); i < m.RowEnd(r); ++i) {
      if (m.col_idx[i] >= m.num_cols)
        Violation(name + ": column out of range in row " + std::to_string(r));
      if (i > m.RowBegin(r) && m.col_idx[i] <= m.col_idx[i - 1]) {
        Violation(name + ": columns not sorted and unique in row " + std::to_string(r));
      }
      if (!m.values.empty() && !std::isfinite(m.values[i])) {
        Violation(name + ": non-finite value in row " + std::to_string(r));
      }
    }
  }
}

inline void CheckDataset(const data::Dataset& dataset) {
  if (dataset.features.num_rows != dataset.labels.num_rows)
    Violation("features and labels differ in rows");
  CheckCsr(dataset.features, "features");
  CheckCsr(dataset.labels, "labels");
  if (!dataset.labels.binary()) Violation("labels carry values");
}

template <class T>
bool SameArray(const data::SharedArray<T>& a, const data::SharedArray<T>& b) {
  return a.size() == b.size() &&
         (a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(T)) == 0);
}

// Bitwise equality of the matrices (warnings and source are not compared).
inline bool SameCsr(const data::CsrMatrix& a, const data::CsrMatrix& b) {
  return a.num_rows == b.num_rows && a.num_cols == b.num_cols && SameArray(a.row_ptr, b.row_ptr) &&
         SameArray(a.col_idx, b.col_idx) && SameArray(a.values, b.values);
}

inline bool SameMatrices(const data::Dataset& a, const data::Dataset& b) {
  return SameCsr(a.features, b.features) && SameCsr(a.labels, b.labels);
}

}  // namespace xmlt::fuzz
