// What `xmltrain info` prints: sizes, per-row distributions, label frequency head and tail.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "data/dataset.h"

namespace xmlt::data {

struct Distribution {
  double min = 0, mean = 0, max = 0;
};

struct DatasetStats {
  uint64_t rows = 0, features = 0, labels = 0, feature_nnz = 0, label_nnz = 0;
  uint64_t rows_without_labels = 0, rows_without_features = 0, labels_never_used = 0;
  Distribution nnz_per_row, labels_per_row;
  std::vector<std::pair<uint32_t, uint64_t>> most_frequent_labels;   // (label, count), descending
  std::vector<std::pair<uint32_t, uint64_t>> least_frequent_labels;  // used labels, ascending
};

DatasetStats ComputeStats(const Dataset& dataset, size_t head_tail = 10);
std::string FormatStats(const DatasetStats& stats, const Dataset& dataset);

}  // namespace xmlt::data
