// The linear ranker over the MLP's shortlist; see linear_ranker.h.
#include "kernels/ranker/linear_ranker.h"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace xmlt::kernels {

namespace {

// The pair of `label` among the pairs [begin, end) of one feature's sorted list, or -1.
int64_t FindPair(const std::vector<uint32_t>& pair_label, uint64_t begin, uint64_t end, uint32_t label) {
  const uint32_t* list = pair_label.data();
  const uint32_t* it = std::lower_bound(list + begin, list + end, label);
  return it != list + end && *it == label ? int64_t(it - list) : -1;
}

// The rows each feature occurs in, feature by feature: a transposed index of the features.
struct RowsByFeature {
  std::vector<uint64_t> begin;  // num_features + 1 offsets into rows
  std::vector<uint64_t> rows;
};

RowsByFeature IndexRowsByFeature(const data::CsrMatrix& x) {
  RowsByFeature index;
  index.begin.assign(x.num_cols + 1, 0);
  for (uint64_t i = 0; i < x.nnz(); ++i) ++index.begin[x.col_idx[i] + 1];
  for (uint64_t f = 0; f < x.num_cols; ++f) index.begin[f + 1] += index.begin[f];
  index.rows.resize(x.nnz());
  std::vector<uint64_t> next(index.begin.begin(), index.begin.end() - 1);
  for (uint64_t r = 0; r < x.num_rows; ++r)
    for (uint64_t i = x.RowBegin(r); i < x.RowEnd(r); ++i) index.rows[next[x.col_idx[i]]++] = r;
  return index;
}

// Calls visit(feature, label) once for every distinct pair of a feature and a label sharing a row
// of `labels`, feature by feature, each feature's labels in the order first met.
template <class Visit>
void ForEachPair(const RowsByFeature& index, const data::CsrMatrix& labels, Visit visit) {
  // The feature (plus one) that last visited each label: no clearing between features.
  std::vector<uint64_t> seen(labels.num_cols, 0);
  for (uint64_t f = 0; f + 1 < index.begin.size(); ++f)
    for (uint64_t k = index.begin[f]; k < index.begin[f + 1]; ++k) {
      const uint64_t r = index.rows[k];
      for (uint64_t j = labels.RowBegin(r); j < labels.RowEnd(r); ++j) {
        const uint32_t label = labels.col_idx[j];
        if (seen[label] == f + 1) continue;
        seen[label] = f + 1;
        visit(f, label);
      }
    }
}

}  // namespace

int64_t LinearRanker::PairOf(uint64_t feature, uint32_t label) const {
  if (feature >= num_features) return -1;
  return FindPair(pair_label, feature_ptr[feature], feature_ptr[feature + 1], label);
}

uint64_t CountLinearRankerPairs(const data::Dataset& train) {
  uint64_t pairs = 0;
  ForEachPair(IndexRowsByFeature(train.features), train.labels, [&](uint64_t, uint32_t) { ++pairs; });
  return pairs;
}

LinearRanker BuildLinearRanker(const data::Dataset& train, uint64_t max_pairs) {
  LinearRanker ranker;
  ranker.num_features = train.num_features();
  ranker.num_labels = train.num_labels();
  // Counted first, so that the limit is checked before the pairs are allocated.
  std::vector<uint64_t>& ptr = ranker.feature_ptr;
  ptr.assign(ranker.num_features + 1, 0);
  const RowsByFeature index = IndexRowsByFeature(train.features);
  ForEachPair(index, train.labels, [&](uint64_t f, uint32_t) { ++ptr[f + 1]; });
  for (uint64_t f = 0; f < ranker.num_features; ++f) ptr[f + 1] += ptr[f];
  const uint64_t pairs = ptr[ranker.num_features];
  if (pairs > max_pairs)
    throw std::length_error("the linear ranker would hold " + std::to_string(pairs) +
                            " (feature, label) pairs, more than the limit of " + std::to_string(max_pairs));
  ranker.pair_label.resize(pairs);
  std::vector<uint64_t> next(ptr.begin(), ptr.end() - 1);
  ForEachPair(index, train.labels, [&](uint64_t f, uint32_t label) { ranker.pair_label[next[f]++] = label; });
  for (uint64_t f = 0; f < ranker.num_features; ++f)
    std::sort(ranker.pair_label.begin() + int64_t(ptr[f]), ranker.pair_label.begin() + int64_t(ptr[f + 1]));
  ranker.weight.assign(pairs, 0.0f);
  ranker.bias.assign(ranker.num_labels, 0.0f);
  return ranker;
}

RankerCandidates CandidatesOf(const data::CsrMatrix& labels, uint64_t row, const uint32_t* shortlist,
                              uint32_t shortlist_size, uint64_t num_labels) {
  RankerCandidates c;
  for (uint64_t j = labels.RowBegin(row); j < labels.RowEnd(row); ++j)
    if (labels.col_idx[j] < num_labels) c.labels.push_back(labels.col_idx[j]), c.positive.push_back(1);
  const size_t own = c.labels.size();
  for (uint32_t i = 0; i < shortlist_size; ++i) {
    const uint32_t label = shortlist[i];
    if (label >= num_labels) continue;
    // The row's labels are sorted (data/csr_matrix.h); the shortlist is short, so a scan of what
    // it added suffices for its own repeats.
    if (std::binary_search(c.labels.begin(), c.labels.begin() + int64_t(own), label)) continue;
    if (std::find(c.labels.begin() + int64_t(own), c.labels.end(), label) != c.labels.end()) continue;
    c.labels.push_back(label), c.positive.push_back(0);
  }
  return c;
}

uint64_t AddDenseLookups(LinearRanker* ranker, uint64_t max_bytes) {
  const uint64_t row_bytes = ranker->num_labels * sizeof(uint32_t);
  const uint64_t rows = row_bytes == 0 ? 0 : max_bytes / row_bytes;
  auto length = [&](uint64_t f) { return ranker->feature_ptr[f + 1] - ranker->feature_ptr[f]; };
  std::vector<uint64_t> longest;  // the features worth a row, longest list first
  for (uint64_t f = 0; f < ranker->num_features; ++f)
    if (length(f) >= kMinDenseLookupLabels) longest.push_back(f);
  std::stable_sort(longest.begin(), longest.end(), [&](uint64_t a, uint64_t b) { return length(a) > length(b); });
  if (longest.size() > rows) longest.resize(rows);
  ranker->dense_row.assign(longest.empty() ? 0 : ranker->num_features, -1);
  ranker->dense_offset.assign(longest.size() * ranker->num_labels, 0);
  for (size_t row = 0; row < longest.size(); ++row) {
    const uint64_t f = longest[row];
    ranker->dense_row[f] = int32_t(row);
    uint32_t* offsets = ranker->dense_offset.data() + row * ranker->num_labels;
    for (uint64_t p = ranker->feature_ptr[f]; p < ranker->feature_ptr[f + 1]; ++p)
      offsets[ranker->pair_label[p]] = uint32_t(p - ranker->feature_ptr[f] + 1);
  }
  return longest.size();
}

void MatchRankerPairs(const LinearRanker& ranker, const data::CsrMatrix& features, uint64_t row,
                      const uint32_t* labels, size_t count, RankerScratch* scratch) {
  std::vector<int32_t>& slot = scratch->slot;
  if (slot.size() != ranker.num_labels) slot.assign(ranker.num_labels, -1);
  uint32_t lowest = UINT32_MAX, highest = 0;
  for (size_t i = 0; i < count; ++i)
    if (labels[i] < ranker.num_labels) {
      slot[labels[i]] = int32_t(i);
      lowest = std::min(lowest, labels[i]);
      highest = std::max(highest, labels[i]);
    }
  scratch->matches.clear();
  if (lowest > highest) return;  // no label the ranker has
  // Past this many labels in the part of a list a scan would read, a binary search per candidate
  // is cheaper: a frequent feature met thousands of labels, a rare one a few.
  const uint64_t search_cost = count * 12;
  const bool dense = !ranker.dense_row.empty();
  for (uint64_t k = features.RowBegin(row); k < features.RowEnd(row); ++k) {
    const uint64_t f = features.col_idx[k];
    if (f >= ranker.num_features) continue;
    const float value = features.binary() ? 1.0f : features.values[k];  // binary rows: every value 1
    const uint64_t first = ranker.feature_ptr[f];
    if (dense && ranker.dense_row[f] >= 0) {
      const uint32_t* offsets = ranker.dense_offset.data() + uint64_t(ranker.dense_row[f]) * ranker.num_labels;
      for (size_t i = 0; i < count; ++i)
        if (labels[i] < ranker.num_labels && offsets[labels[i]] != 0)
          scratch->matches.push_back({first + offsets[labels[i]] - 1, uint32_t(i), value});
      continue;
    }
    const uint32_t* list = ranker.pair_label.data();
    uint64_t begin = first, end = ranker.feature_ptr[f + 1];
    // Only the part of a long list from the lowest to the highest label asked.
    if (end - begin > 16) {
      begin = uint64_t(std::lower_bound(list + begin, list + end, lowest) - list);
      end = uint64_t(std::upper_bound(list + begin, list + end, highest) - list);
    }
    if (end - begin <= search_cost) {
      for (uint64_t p = begin; p < end; ++p) {
        const int32_t s = slot[list[p]];
        if (s >= 0) scratch->matches.push_back({p, uint32_t(s), value});
      }
    } else {
      for (size_t i = 0; i < count; ++i) {
        const int64_t p = labels[i] < ranker.num_labels ? FindPair(ranker.pair_label, begin, end, labels[i]) : -1;
        if (p >= 0) scratch->matches.push_back({uint64_t(p), uint32_t(i), value});
      }
    }
  }
  for (size_t i = 0; i < count; ++i)
    if (labels[i] < ranker.num_labels) slot[labels[i]] = -1;
}

void RankerScores(const LinearRanker& ranker, const data::CsrMatrix& features, uint64_t row,
                  const uint32_t* labels, size_t count, float* scores, RankerScratch* scratch) {
  MatchRankerPairs(ranker, features, row, labels, count, scratch);
  for (size_t i = 0; i < count; ++i) scores[i] = labels[i] < ranker.num_labels ? ranker.bias[labels[i]] : 0.0f;
  for (const RankerMatch& m : scratch->matches) scores[m.candidate] += m.value * ranker.weight[m.pair];
}

}  // namespace xmlt::kernels
