// A one-vs-all linear model over the sparse features that re-scores the MLP's shortlist: the
// squared hinge per label, as the XML field's linear models train, on each row's labels and the
// labels the MLP ranks highest for it. On EURLEX57K it lifts the MLP's P@1, where the same hinge
// on the MLP itself does not train (measured: docs/experiments/peers.md).
//
// A label has a weight only on the features it met in a training row: a small share of the dense
// table at almost no cost in accuracy (measured: docs/experiments/peers.md), and what keeps the
// ranker possible at 670,091 labels, where features x labels is not. The pairs are stored by
// feature, each feature's labels sorted; the features that met the most labels also get a dense
// row of their labels (AddDenseLookups), which finds a pair without searching their long lists.
// Training: linear_ranker_dual.h.
//
// Trained after the MLP by run/ranker_stage.h; the model file keeps it (engine/model_file.h).
#pragma once

#include <cstdint>
#include <vector>

#include "data/csr_matrix.h"
#include "data/dataset.h"

namespace xmlt::kernels {

struct LinearRanker {
  uint64_t num_features = 0, num_labels = 0;
  std::vector<uint64_t> feature_ptr;  // num_features + 1 offsets into the pairs
  std::vector<uint32_t> pair_label;   // per pair: its label, ascending within a feature
  std::vector<float> weight;  // per pair
  std::vector<float> bias;    // per label

  // Dense lookups (AddDenseLookups): dense_row[f] is feature f's row of dense_offset, or -1;
  // dense_offset[row * num_labels + label] is the pair's offset in the feature's list plus one, 0
  // where the two never met. Both empty when no feature has one.
  std::vector<int32_t> dense_row;
  std::vector<uint32_t> dense_offset;

  uint64_t num_pairs() const { return pair_label.size(); }
  // The pair of (feature, label), or -1 when they never met (a feature beyond the model has none).
  int64_t PairOf(uint64_t feature, uint32_t label) const;
};

// How many distinct (feature, label) pairs share a row of `train`: the pairs of its ranker.
uint64_t CountLinearRankerPairs(const data::Dataset& train);

// The ranker of `train`'s (feature, label) pairs that share a row, weights and biases 0. Throws
// std::length_error, before allocating them, when there are more than `max_pairs`.
LinearRanker BuildLinearRanker(const data::Dataset& train, uint64_t max_pairs);

// Below this many labels a feature's list is scanned or searched: a dense row would not pay.
inline constexpr uint64_t kMinDenseLookupLabels = 64;

// Gives dense lookups to the features that met the most labels, longest list first, while their
// rows (num_labels x 4 bytes each) fit in `max_bytes`. Scores and training are the same with or
// without them. Returns how many features got one.
uint64_t AddDenseLookups(LinearRanker* ranker, uint64_t max_bytes);

// One row's candidates and their targets: `labels[i]` is scored, and `positive[i]` says whether it
// is one of the row's labels.
struct RankerCandidates {
  std::vector<uint32_t> labels;
  std::vector<uint8_t> positive;
};

// The row's labels, then the shortlist's labels that are not among them, in shortlist order
// (labels at or beyond num_labels skipped).
RankerCandidates CandidatesOf(const data::CsrMatrix& labels, uint64_t row, const uint32_t* shortlist,
                              uint32_t shortlist_size, uint64_t num_labels);

// A pair of one of the row's features with one of the candidates, and the feature's value there.
struct RankerMatch {
  uint64_t pair = 0;
  uint32_t candidate = 0;  // index into the candidates
  float value = 0;
};

// What a row's scoring reuses: the row's matches, and each label's candidate index (-1 between
// rows; num_labels entries once used).
struct RankerScratch {
  std::vector<RankerMatch> matches;
  std::vector<int32_t> slot;
};

// Fills scratch->matches with every existing pair of the row's features and `labels` (distinct, as
// CandidatesOf's are), feature by feature (labels at or beyond num_labels never match). Each feature's pairs are found in its
// dense row if it has one, else by a scan of the part of its list between the smallest and the
// largest label asked, or by a binary search per label where that part is long.
void MatchRankerPairs(const LinearRanker& ranker, const data::CsrMatrix& features, uint64_t row,
                      const uint32_t* labels, size_t count, RankerScratch* scratch);

// scores[i] = bias + sum over the row's features f of x_f w(f, labels[i]), the pairs that exist.
void RankerScores(const LinearRanker& ranker, const data::CsrMatrix& features, uint64_t row,
                  const uint32_t* labels, size_t count, float* scores, RankerScratch* scratch);

}  // namespace xmlt::kernels
