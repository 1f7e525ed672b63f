// How well SLIDE's tables pick a row's labels: the share of the true top-k logits (w_i . h over
// every label, the dense forward) that a query's active set holds, against a uniformly random set
// of labels of the same size. The random set's share is about size / labels; the tables are worth
// their cost only as far as theirs is larger. Used by benchmarks/hash_quality.cc and the tests.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "kernels/lsh/label_tables.h"

namespace xmlt::kernels::lsh {

// The `top` largest logits w_i . h + b_i of each of the `n` queries h (n x dim, row-major) against
// `rows` w (labels x dim) and `bias` b (labels, or null for none): n x top label ids, largest first.
std::vector<uint32_t> TopLabels(const float* rows, const float* bias, size_t labels, size_t dim,
                                const float* queries, size_t n, size_t top);

struct ActiveSetRecall {
  double recall = 0;         // mean share of a query's true top labels in its active set
  double random_recall = 0;  // the same for a uniformly random set of as many labels (seeded)
  double active = 0;         // mean active-set size (distinct labels)
};

// Queries each of the `n` queries (with `bucket_cap` labels from a bucket at most, no padding and
// no own labels: the tables alone) and scores its active set against `top_labels` (TopLabels).
ActiveSetRecall MeasureActiveSetRecall(const LabelTables& tables, const float* queries, size_t n,
                                       const std::vector<uint32_t>& top_labels, size_t top, size_t bucket_cap,
                                       uint64_t seed);

}  // namespace xmlt::kernels::lsh
