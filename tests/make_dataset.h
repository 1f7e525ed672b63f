// One way for the tests to build a Dataset from rows they write by hand or draw at random.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "data/dataset.h"

namespace xmlt::testing {

struct DatasetRow {
  std::vector<std::pair<uint32_t, float>> features;  // sorted by id
  std::vector<uint32_t> labels;                      // sorted; empty for an unlabeled row
};

inline data::Dataset MakeDataset(const std::vector<DatasetRow>& rows, uint64_t num_features, uint64_t num_labels,
                                 std::string source = "test") {
  std::vector<uint64_t> fptr{0}, lptr{0};
  std::vector<uint32_t> fidx, lidx;
  std::vector<float> fval;
  for (const DatasetRow& row : rows) {
    for (const auto& [id, value] : row.features) {
      fidx.push_back(id);
      fval.push_back(value);
    }
    fptr.push_back(fidx.size());
    lidx.insert(lidx.end(), row.labels.begin(), row.labels.end());
    lptr.push_back(lidx.size());
  }
  data::Dataset d;
  d.features.num_rows = d.labels.num_rows = rows.size();
  d.features.num_cols = num_features;
  d.labels.num_cols = num_labels;
  d.features.row_ptr = data::SharedArray<uint64_t>(std::move(fptr));
  d.features.col_idx = data::SharedArray<uint32_t>(std::move(fidx));
  d.features.values = data::SharedArray<float>(std::move(fval));
  d.labels.row_ptr = data::SharedArray<uint64_t>(std::move(lptr));
  d.labels.col_idx = data::SharedArray<uint32_t>(std::move(lidx));
  d.source = std::move(source);
  return d;
}

}  // namespace xmlt::testing
