// The active sets' recall of the true top logits; see active_set_recall.h.
#include "kernels/lsh/active_set_recall.h"

#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>

#include <algorithm>
#include <functional>
#include <random>
#include <stdexcept>
#include <utility>

namespace xmlt::kernels::lsh {

std::vector<uint32_t> TopLabels(const float* rows, const float* bias, size_t labels, size_t dim,
                                const float* queries, size_t n, size_t top) {
  if (top == 0 || top > labels) throw std::invalid_argument("TopLabels: top must be in [1, labels]");
  std::vector<uint32_t> out(n * top);
  tbb::parallel_for(tbb::blocked_range<size_t>(0, n), [&](const auto& range) {
    std::vector<std::pair<float, uint32_t>> logits(labels);
    for (size_t q = range.begin(); q != range.end(); ++q) {
      const float* h = queries + q * dim;
      for (size_t i = 0; i < labels; ++i) {
        const float* w = rows + i * dim;
        float dot = bias ? bias[i] : 0.0f;
        for (size_t j = 0; j < dim; ++j) dot += w[j] * h[j];
        logits[i] = {dot, uint32_t(i)};
      }
      std::partial_sort(logits.begin(), logits.begin() + int64_t(top), logits.end(), std::greater<>());
      for (size_t t = 0; t < top; ++t) out[q * top + t] = logits[t].second;
    }
  });
  return out;
}

ActiveSetRecall MeasureActiveSetRecall(const LabelTables& tables, const float* queries, size_t n,
                                       const std::vector<uint32_t>& top_labels, size_t top, size_t bucket_cap,
                                       uint64_t seed) {
  if (top_labels.size() != n * top) throw std::invalid_argument("MeasureActiveSetRecall: top_labels is not n x top");
  const size_t labels = tables.labels(), dim = tables.family().dim;
  std::mt19937_64 rng(seed);
  std::vector<uint32_t> seen, active, stamps(labels, 0), pool(labels);
  for (size_t i = 0; i < labels; ++i) pool[i] = uint32_t(i);
  double found = 0, found_random = 0, size = 0;
  for (size_t q = 0; q < n; ++q) {
    const uint32_t stamp = uint32_t(q + 1);
    active.clear();
    tables.Query(queries + q * dim, bucket_cap, &seen, stamp, &active);
    const uint32_t* truth = top_labels.data() + q * top;
    for (size_t t = 0; t < top; ++t) found += seen[truth[t]] == stamp;
    // A random set of the same size: the first active.size() of a partial Fisher-Yates shuffle.
    for (size_t i = 0; i < active.size(); ++i) {
      std::swap(pool[i], pool[i + std::uniform_int_distribution<size_t>(0, labels - 1 - i)(rng)]);
      stamps[pool[i]] = stamp;
    }
    for (size_t t = 0; t < top; ++t) found_random += stamps[truth[t]] == stamp;
    size += double(active.size());
  }
  const double queries_top = double(n) * double(top);
  return {found / queries_top, found_random / queries_top, size / double(n)};
}

}  // namespace xmlt::kernels::lsh
