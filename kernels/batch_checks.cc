// The checks a batch passes before device kernels index it; see batch_checks.h.
#include "kernels/batch_checks.h"

#include <algorithm>
#include <stdexcept>
#include <vector>

namespace xmlt::kernels {
namespace {

void CheckOffsets(const std::vector<uint64_t>& ptr, uint32_t rows, size_t nnz, const std::string& name,
                  const std::string& who) {
  if (ptr.size() != size_t(rows) + 1)
    throw std::invalid_argument(who + ": " + name + " has " + std::to_string(ptr.size()) + " entries for " +
                                std::to_string(rows) + " rows");
  if (ptr[0] != 0 || ptr[rows] != nnz) throw std::invalid_argument(who + ": " + name + " does not span [0, nnz]");
  for (uint32_t r = 0; r < rows; ++r)
    if (ptr[r + 1] < ptr[r]) throw std::invalid_argument(who + ": " + name + " decreases at row " + std::to_string(r));
}

void CheckIds(const std::vector<uint32_t>& ids, uint64_t limit, const std::string& name, const std::string& who) {
  const auto max = std::max_element(ids.begin(), ids.end());
  if (max != ids.end() && *max >= limit)
    throw std::invalid_argument(who + ": " + name + " id " + std::to_string(*max) + " out of range (" +
                                std::to_string(limit) + ")");
}

}  // namespace

void CheckBatchForModel(const data::SparseBatch& batch, uint64_t num_features, uint64_t num_labels,
                        const std::string& who) {
  const uint32_t rows = batch.num_rows;
  if (batch.feature_val.size() != batch.feature_idx.size())
    throw std::invalid_argument(who + ": feature_val and feature_idx differ in size");
  CheckOffsets(batch.feature_ptr, rows, batch.feature_idx.size(), "feature_ptr", who);
  CheckOffsets(batch.label_ptr, rows, batch.label_idx.size(), "label_ptr", who);
  CheckIds(batch.feature_idx, num_features, "feature", who);
  CheckIds(batch.label_idx, num_labels, "label", who);
  for (uint32_t r = 0; r < rows; ++r)
    for (uint64_t i = batch.label_ptr[r] + 1; i < batch.label_ptr[r + 1]; ++i)
      if (batch.label_idx[i] <= batch.label_idx[i - 1])
        throw std::invalid_argument(who + ": the labels of row " + std::to_string(r) + " are not strictly increasing (" +
                                    std::to_string(batch.label_idx[i - 1]) + " then " +
                                    std::to_string(batch.label_idx[i]) + ")");
}

}  // namespace xmlt::kernels
