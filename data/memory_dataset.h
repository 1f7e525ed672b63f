// A dataset handed in from memory as CSR arrays (a scipy.sparse matrix's indptr, indices and
// data), checked as the text readers check their rows, so that training on it is training on the
// same rows written as text: ids below the column count, finite values, each row's ids ascending
// and unique. Rows already in that form are borrowed without a copy; a row with unsorted or
// repeated ids makes a sorted copy, repeated features summed in array order and repeated labels
// kept once, as the reader does (canonical_row.h).
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "data/dataset.h"

namespace xmlt::data {

struct CsrArrays {
  uint64_t num_rows = 0, num_cols = 0;
  const uint64_t* indptr = nullptr;   // num_rows + 1 offsets, the first 0
  const uint32_t* indices = nullptr;  // indptr[num_rows] column ids
  const float* values = nullptr;      // as many values; labels: each 1
  // Keeps the arrays alive for as long as the matrix made from them borrows them; null: the
  // caller keeps them alive as long as it uses the matrix.
  std::shared_ptr<const void> owner;
};

// Throws InputError naming `name` (e.g. "X", "Y_test") and the row for anything the readers refuse.
CsrMatrix FeaturesFromArrays(const CsrArrays& arrays, const std::string& name);
// The labels: every value must be 1 (a stored 0 would be a label the text could not say).
CsrMatrix LabelsFromArrays(const CsrArrays& arrays, const std::string& name);
// Features and labels of the same rows; `source` names the pair in messages ("X, Y").
Dataset DatasetFromMatrices(CsrMatrix features, CsrMatrix labels, const std::string& features_name,
                            const std::string& labels_name);

}  // namespace xmlt::data
