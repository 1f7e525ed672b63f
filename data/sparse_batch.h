// A batch of rows gathered out of a Dataset into contiguous CSR arrays: what a device copies in
// and the kernels consume. Buffers keep their capacity, so steady-state gathering allocates nothing.
#pragma once

#include <cstdint>
#include <vector>

#include "data/dataset.h"

namespace xmlt::data {

struct SparseBatch {
  uint32_t num_rows = 0;
  std::vector<uint64_t> feature_ptr{0};  // num_rows + 1
  std::vector<uint32_t> feature_idx;
  std::vector<float> feature_val;
  std::vector<uint64_t> label_ptr{0};  // num_rows + 1
  std::vector<uint32_t> label_idx;     // sorted within a row

  void Clear();
  uint32_t NumLabels(uint32_t row) const { return uint32_t(label_ptr[row + 1] - label_ptr[row]); }
};

// Replaces `batch` with the rows `rows[0..count)` of `dataset`, in that order.
void GatherBatch(const Dataset& dataset, const uint64_t* rows, size_t count, SparseBatch* batch);

}  // namespace xmlt::data
