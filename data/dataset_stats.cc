// Dataset statistics for `xmltrain info`; see dataset_stats.h.
#include "data/dataset_stats.h"

#include <algorithm>
#include <cstdio>

namespace xmlt::data {
namespace {

struct RowSizes {
  Distribution distribution;
  uint64_t empty_rows = 0;
};

RowSizes Measure(const CsrMatrix& m) {
  RowSizes sizes;
  if (m.num_rows == 0) return sizes;
  uint64_t min = UINT64_MAX, max = 0;
  for (uint64_t r = 0; r < m.num_rows; ++r) {
    const uint64_t n = m.RowSize(r);
    min = std::min(min, n);
    max = std::max(max, n);
    if (n == 0) ++sizes.empty_rows;
  }
  sizes.distribution = {static_cast<double>(min),
                        static_cast<double>(m.nnz()) / static_cast<double>(m.num_rows),
                        static_cast<double>(max)};
  return sizes;
}

std::string FormatDistribution(const Distribution& d) {
  char text[96];
  std::snprintf(text, sizeof text, "min %.0f, mean %.2f, max %.0f", d.min, d.mean, d.max);
  return text;
}

std::string FormatLabelCounts(const std::vector<std::pair<uint32_t, uint64_t>>& counts) {
  std::string text;
  for (const auto& [label, count] : counts) {
    if (!text.empty()) text += ", ";
    text += std::to_string(label) + " (" + std::to_string(count) + ")";
  }
  return text.empty() ? "-" : text;
}

}  // namespace

DatasetStats ComputeStats(const Dataset& dataset, size_t head_tail) {
  DatasetStats stats;
  stats.rows = dataset.num_rows();
  stats.features = dataset.num_features();
  stats.labels = dataset.num_labels();
  stats.feature_nnz = dataset.features.nnz();
  stats.label_nnz = dataset.labels.nnz();
  const RowSizes features = Measure(dataset.features);
  const RowSizes labels = Measure(dataset.labels);
  stats.nnz_per_row = features.distribution;
  stats.labels_per_row = labels.distribution;
  stats.rows_without_features = features.empty_rows;
  stats.rows_without_labels = labels.empty_rows;

  // Counting by sorting keeps memory proportional to the labels present, not to a declared L.
  std::vector<uint32_t> ids(dataset.labels.col_idx.begin(), dataset.labels.col_idx.end());
  std::sort(ids.begin(), ids.end());
  std::vector<std::pair<uint32_t, uint64_t>> counts;
  for (size_t i = 0; i < ids.size();) {
    size_t j = i;
    while (j < ids.size() && ids[j] == ids[i]) ++j;
    counts.emplace_back(ids[i], j - i);
    i = j;
  }
  stats.labels_never_used = stats.labels > counts.size() ? stats.labels - counts.size() : 0;

  const size_t n = std::min(head_tail, counts.size());
  auto by_count = [](const auto& a, const auto& b) {
    return a.second != b.second ? a.second > b.second : a.first < b.first;
  };
  std::vector<std::pair<uint32_t, uint64_t>> ranked = counts;
  std::partial_sort(ranked.begin(), ranked.begin() + n, ranked.end(), by_count);
  stats.most_frequent_labels.assign(ranked.begin(), ranked.begin() + n);
  auto by_count_ascending = [](const auto& a, const auto& b) {
    return a.second != b.second ? a.second < b.second : a.first < b.first;
  };
  std::partial_sort(counts.begin(), counts.begin() + n, counts.end(), by_count_ascending);
  stats.least_frequent_labels.assign(counts.begin(), counts.begin() + n);
  return stats;
}

std::string FormatStats(const DatasetStats& stats, const Dataset& dataset) {
  std::string text;
  auto line = [&](const std::string& name, const std::string& value) {
    text += name;
    text.append(name.size() < 24 ? 24 - name.size() : 1, ' ');
    text += value + "\n";
  };
  line("source", dataset.source);
  line("rows", std::to_string(stats.rows));
  line("features (D)", std::to_string(stats.features));
  line("labels (L)", std::to_string(stats.labels) + " (" + std::to_string(stats.labels_never_used) +
                         " never used)");
  line("feature nnz", std::to_string(stats.feature_nnz));
  line("label nnz", std::to_string(stats.label_nnz));
  line("features per row", FormatDistribution(stats.nnz_per_row));
  line("labels per row", FormatDistribution(stats.labels_per_row));
  line("rows without labels", std::to_string(stats.rows_without_labels));
  line("rows without features", std::to_string(stats.rows_without_features));
  line("most frequent labels", FormatLabelCounts(stats.most_frequent_labels));
  line("least frequent labels", FormatLabelCounts(stats.least_frequent_labels));
  if (dataset.warnings.empty()) {
    line("warnings", "none");
  } else {
    line("warnings", std::to_string(dataset.warnings.size()));
    for (const auto& warning : dataset.warnings) text += "  " + warning + "\n";
  }
  return text;
}

}  // namespace xmlt::data
