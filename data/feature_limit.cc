// Cutting a dataset to a model's input size; see feature_limit.h.
#include "data/feature_limit.h"

#include <utility>
#include <vector>

namespace xmlt::data {

FeatureLimit LimitFeatures(const Dataset& dataset, uint64_t num_features) {
  FeatureLimit out;
  out.dataset = dataset;
  const CsrMatrix& x = dataset.features;
  if (x.num_cols <= num_features) return out;
  std::vector<uint64_t> row_ptr(x.num_rows + 1, 0);
  std::vector<uint32_t> col_idx;
  std::vector<float> values;
  col_idx.reserve(x.nnz());
  if (!x.binary()) values.reserve(x.nnz());
  for (uint64_t r = 0; r < x.num_rows; ++r) {
    bool touched = false;
    for (uint64_t e = x.RowBegin(r); e < x.RowEnd(r); ++e) {
      if (x.col_idx[e] >= num_features) {
        ++out.dropped;
        touched = true;
        continue;
      }
      col_idx.push_back(x.col_idx[e]);
      if (!x.binary()) values.push_back(x.values[e]);
    }
    out.rows_touched += touched ? 1 : 0;
    row_ptr[r + 1] = col_idx.size();
  }
  CsrMatrix& features = out.dataset.features;
  features.num_cols = num_features;
  features.row_ptr = SharedArray<uint64_t>(std::move(row_ptr));
  features.col_idx = SharedArray<uint32_t>(std::move(col_idx));
  features.values = SharedArray<float>(std::move(values));
  return out;
}

}  // namespace xmlt::data
