// A multi-label dataset in host memory: CSR features (float values) and CSR labels (binary).
#pragma once

#include <string>
#include <vector>

#include "data/csr_matrix.h"
#include "data/shared_array.h"

namespace xmlt::data {

struct Dataset {
  CsrMatrix features;  // num_rows x num_features
  CsrMatrix labels;    // num_rows x num_labels, binary
  std::string source;  // the file(s) it came from, for messages
  std::vector<std::string> warnings;  // non-fatal findings of the reader (header mismatch, ...)
  // Per label, the inverse propensity w_l that the propensity-scored metrics of an evaluation on
  // these rows use (kernels/propensity.h, from the training rows' labels); empty: none. Set by
  // the commands that evaluate, never read from or written to a file.
  SharedArray<float> inverse_propensity;

  uint64_t num_rows() const { return features.num_rows; }
  uint64_t num_features() const { return features.num_cols; }
  uint64_t num_labels() const { return labels.num_cols; }
};

}  // namespace xmlt::data
