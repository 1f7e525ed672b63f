// Gathering dataset rows into a batch; see sparse_batch.h.
#include "data/sparse_batch.h"

#include <limits>
#include <stdexcept>
#include <string>

namespace xmlt::data {

void SparseBatch::Clear() {
  num_rows = 0;
  feature_ptr.assign(1, 0);
  feature_idx.clear();
  feature_val.clear();
  label_ptr.assign(1, 0);
  label_idx.clear();
}

void GatherBatch(const Dataset& dataset, const uint64_t* rows, size_t count, SparseBatch* batch) {
  // num_rows is 32-bit: a larger count would be silently truncated.
  if (count > std::numeric_limits<uint32_t>::max())
    throw std::invalid_argument("a batch of " + std::to_string(count) + " rows exceeds 2^32-1");
  batch->Clear();
  const CsrMatrix& x = dataset.features;
  const CsrMatrix& y = dataset.labels;
  for (size_t i = 0; i < count; ++i) {
    const uint64_t r = rows[i];
    const uint64_t fb = x.RowBegin(r), fe = x.RowEnd(r);
    batch->feature_idx.insert(batch->feature_idx.end(), x.col_idx.data() + fb, x.col_idx.data() + fe);
    if (x.binary()) {
      batch->feature_val.insert(batch->feature_val.end(), fe - fb, 1.0f);
    } else {
      batch->feature_val.insert(batch->feature_val.end(), x.values.data() + fb, x.values.data() + fe);
    }
    batch->feature_ptr.push_back(batch->feature_idx.size());
    batch->label_idx.insert(batch->label_idx.end(), y.col_idx.data() + y.RowBegin(r),
                            y.col_idx.data() + y.RowEnd(r));
    batch->label_ptr.push_back(batch->label_idx.size());
  }
  batch->num_rows = uint32_t(count);
}

}  // namespace xmlt::data
