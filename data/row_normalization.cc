// Row L2 normalization; see row_normalization.h.
#include "data/row_normalization.h"

#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>

#include <cmath>
#include <vector>

namespace xmlt::data {

Dataset NormalizeRowsL2(const Dataset& dataset) {
  const CsrMatrix& x = dataset.features;
  std::vector<float> values(x.nnz());
  tbb::parallel_for(tbb::blocked_range<uint64_t>(0, x.num_rows, 1024), [&](const tbb::blocked_range<uint64_t>& rows) {
    for (uint64_t r = rows.begin(); r < rows.end(); ++r) {
      double norm = 0;
      for (uint64_t e = x.RowBegin(r); e < x.RowEnd(r); ++e) {
        const double v = x.binary() ? 1.0 : double(x.values[e]);
        norm += v * v;
      }
      const double scale = norm > 0 ? 1.0 / std::sqrt(norm) : 0.0;
      for (uint64_t e = x.RowBegin(r); e < x.RowEnd(r); ++e)
        values[e] = float((x.binary() ? 1.0 : double(x.values[e])) * scale);
    }
  });
  Dataset normalized = dataset;
  normalized.features.values = SharedArray<float>(std::move(values));
  return normalized;
}

}  // namespace xmlt::data
