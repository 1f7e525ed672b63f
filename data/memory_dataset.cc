// Datasets from CSR arrays in memory; see memory_dataset.h.
#include "data/memory_dataset.h"

#include <cmath>
#include <vector>

#include "data/canonical_row.h"
#include "data/input_error.h"

namespace xmlt::data {
namespace {

std::string Row(uint64_t r) { return "row " + std::to_string(r); }

// The offsets run from 0 to the entry count without going back; the ids are below the columns.
// Returns whether every row's ids ascend strictly (no copy needed).
bool CheckStructure(const CsrArrays& a, const std::string& name, const char* kind) {
  if (a.num_cols > uint64_t{1} << 32)
    throw InputError(name, 0, "has " + std::to_string(a.num_cols) + " " + kind + ", more than 2^32");
  if (a.indptr == nullptr || a.indptr[0] != 0)
    throw InputError(name, 0, "malformed CSR arrays: indptr must start at 0");
  bool canonical = true;
  for (uint64_t r = 0; r < a.num_rows; ++r) {
    const uint64_t begin = a.indptr[r], end = a.indptr[r + 1];
    if (end < begin) throw InputError(name, 0, "malformed CSR arrays: indptr decreases at " + Row(r));
    for (uint64_t e = begin; e < end; ++e) {
      if (a.indices[e] >= a.num_cols)
        throw InputError(name, 0, Row(r) + ": " + (kind[0] == 'f' ? "feature id " : "label id ") +
                                      std::to_string(a.indices[e]) + " is beyond the " + std::to_string(a.num_cols) +
                                      " " + kind);
      if (e > begin && a.indices[e] <= a.indices[e - 1]) canonical = false;
    }
  }
  return canonical;
}

SharedArray<uint64_t> BorrowedOffsets(const CsrArrays& a) {
  return SharedArray<uint64_t>(a.indptr, a.num_rows + 1, a.owner);
}

}  // namespace

CsrMatrix FeaturesFromArrays(const CsrArrays& a, const std::string& name) {
  const bool canonical = CheckStructure(a, name, "features");
  const uint64_t nnz = a.indptr[a.num_rows];
  for (uint64_t r = 0; r < a.num_rows; ++r)
    for (uint64_t e = a.indptr[r]; e < a.indptr[r + 1]; ++e)
      if (!std::isfinite(a.values[e]))
        throw InputError(name, 0, Row(r) + ": the value of feature id " + std::to_string(a.indices[e]) +
                                      " is NaN or infinite");
  CsrMatrix m;
  m.num_rows = a.num_rows;
  m.num_cols = a.num_cols;
  if (canonical) {
    m.row_ptr = BorrowedOffsets(a);
    m.col_idx = SharedArray<uint32_t>(a.indices, nnz, a.owner);
    m.values = SharedArray<float>(a.values, nnz, a.owner);
    return m;
  }
  // Each row as the text reader makes it (canonical_row.h); the error names the row and the id as
  // stored, where the reader names the line and the id as its file spells it.
  std::vector<uint64_t> offsets(a.num_rows + 1, 0);
  std::vector<uint32_t> ids;
  std::vector<float> values;
  ids.reserve(nnz);
  values.reserve(nnz);
  std::vector<FeatureEntry> row;
  for (uint64_t r = 0; r < a.num_rows; ++r) {
    row.clear();
    for (uint64_t e = a.indptr[r]; e < a.indptr[r + 1]; ++e) row.push_back({a.indices[e], a.values[e]});
    const SummedFeatures summed = SortAndSumFeatures(row.data(), row.data() + row.size());
    if (summed.out_of_range)
      throw InputError(name, 0, Row(r) + ": " + RepeatedFeatureSumProblem(summed.out_of_range_id));
    for (size_t i = 0; i < summed.size; ++i) {
      ids.push_back(row[i].id);
      values.push_back(row[i].value);
    }
    offsets[r + 1] = ids.size();
  }
  m.row_ptr = SharedArray<uint64_t>(std::move(offsets));
  m.col_idx = SharedArray<uint32_t>(std::move(ids));
  m.values = SharedArray<float>(std::move(values));
  return m;
}

CsrMatrix LabelsFromArrays(const CsrArrays& a, const std::string& name) {
  const bool canonical = CheckStructure(a, name, "labels");
  const uint64_t nnz = a.indptr[a.num_rows];
  if (a.values != nullptr)
    for (uint64_t r = 0; r < a.num_rows; ++r)
      for (uint64_t e = a.indptr[r]; e < a.indptr[r + 1]; ++e)
        if (a.values[e] != 1.0f)
          throw InputError(name, 0, Row(r) + ": label id " + std::to_string(a.indices[e]) + " has the value " +
                                        std::to_string(a.values[e]) + "; a label matrix holds only 1s");
  CsrMatrix m;
  m.num_rows = a.num_rows;
  m.num_cols = a.num_cols;
  if (canonical) {
    m.row_ptr = BorrowedOffsets(a);
    m.col_idx = SharedArray<uint32_t>(a.indices, nnz, a.owner);
    return m;
  }
  std::vector<uint64_t> offsets(a.num_rows + 1, 0);
  std::vector<uint32_t> ids;
  ids.reserve(nnz);
  for (uint64_t r = 0; r < a.num_rows; ++r) {
    const size_t row_begin = ids.size();
    ids.insert(ids.end(), a.indices + a.indptr[r], a.indices + a.indptr[r + 1]);
    ids.resize(row_begin + SortAndDedupLabels(ids.data() + row_begin, ids.data() + ids.size()));
    offsets[r + 1] = ids.size();
  }
  m.row_ptr = SharedArray<uint64_t>(std::move(offsets));
  m.col_idx = SharedArray<uint32_t>(std::move(ids));
  return m;
}

Dataset DatasetFromMatrices(CsrMatrix features, CsrMatrix labels, const std::string& features_name,
                            const std::string& labels_name) {
  if (features.num_rows != labels.num_rows)
    throw InputError(features_name, 0, "has " + std::to_string(features.num_rows) + " rows but " + labels_name +
                                           " has " + std::to_string(labels.num_rows));
  if (features.num_rows == 0) throw InputError(features_name, 0, "has no rows");
  Dataset dataset;
  dataset.features = std::move(features);
  dataset.labels = std::move(labels);
  dataset.source = features_name + ", " + labels_name;
  return dataset;
}

}  // namespace xmlt::data
