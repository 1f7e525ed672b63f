// Dual coordinate descent for the linear ranker; see linear_ranker_dual.h.
#include "kernels/ranker/linear_ranker_dual.h"

#include <tbb/blocked_range.h>
#include <tbb/enumerable_thread_specific.h>
#include <tbb/parallel_for.h>

#include <algorithm>
#include <limits>
#include <random>
#include <stdexcept>
#include <vector>

namespace xmlt::kernels {

namespace {

constexpr uint32_t kNoPair = std::numeric_limits<uint32_t>::max();

// Every label's rows: the rows that have it among their candidates, positive or not, by label.
struct RowsByLabel {
  std::vector<uint64_t> begin;   // num_labels + 1 offsets
  std::vector<uint32_t> row;
  std::vector<uint8_t> positive;
};

RowsByLabel IndexRowsByLabel(uint64_t num_labels, const data::CsrMatrix& labels, const uint32_t* shortlists,
                             uint32_t shortlist_size) {
  RowsByLabel index;
  index.begin.assign(num_labels + 1, 0);
  auto candidates = [&](uint64_t r) {
    return CandidatesOf(labels, r, shortlist_size == 0 ? nullptr : shortlists + r * shortlist_size, shortlist_size,
                        num_labels);
  };
  for (uint64_t r = 0; r < labels.num_rows; ++r)
    for (const uint32_t label : candidates(r).labels) ++index.begin[label + 1];
  for (uint64_t l = 0; l < num_labels; ++l) index.begin[l + 1] += index.begin[l];
  index.row.resize(index.begin[num_labels]);
  index.positive.resize(index.begin[num_labels]);
  std::vector<uint64_t> next(index.begin.begin(), index.begin.end() - 1);
  for (uint64_t r = 0; r < labels.num_rows; ++r) {
    const RankerCandidates c = candidates(r);
    for (size_t i = 0; i < c.labels.size(); ++i) {
      const uint64_t at = next[c.labels[i]]++;
      index.row[at] = uint32_t(r);
      index.positive[at] = c.positive[i];
    }
  }
  return index;
}

// The pair of (feature, label), found in the feature's dense row if it has one.
uint32_t FindPairFast(const LinearRanker& ranker, uint64_t feature, uint32_t label) {
  if (!ranker.dense_row.empty() && ranker.dense_row[feature] >= 0) {
    const uint32_t offset = ranker.dense_offset[uint64_t(ranker.dense_row[feature]) * ranker.num_labels + label];
    return offset == 0 ? kNoPair : uint32_t(ranker.feature_ptr[feature] + offset - 1);
  }
  const int64_t pair = ranker.PairOf(feature, label);
  return pair < 0 ? kNoPair : uint32_t(pair);
}

// One thread's copy of the label being solved, by feature: its weight, and 1 where the feature has
// a pair with the label (0 elsewhere, so that a row's other features add and take nothing without
// a branch). A label's pairs lie a feature's list apart in the ranker: solved in place, every step
// missed the cache. The pairs of the touched features write the weights back.
struct LabelScratch {
  std::vector<float> weight_of_feature, pair_mask;
  std::vector<uint64_t> touched;  // the label's features
  std::vector<uint32_t> pair;     // per touched feature
  std::vector<double> alpha, diagonal;
  std::vector<uint32_t> order;
};

// Maps the label's features to their pairs with it. They are the features of its own rows (the
// pairs are those that share a row); features of the other rows that never met it keep kNoPair.
void MapLabelPairs(const LinearRanker& ranker, const data::CsrMatrix& x, const RowsByLabel& index, uint32_t label,
                   LabelScratch* s) {
  if (s->pair_mask.size() != ranker.num_features) {
    s->weight_of_feature.assign(ranker.num_features, 0.0f);
    s->pair_mask.assign(ranker.num_features, 0.0f);
  }
  s->touched.clear();
  s->pair.clear();
  for (uint64_t k = index.begin[label]; k < index.begin[label + 1]; ++k) {
    if (!index.positive[k]) continue;
    const uint32_t r = index.row[k];
    for (uint64_t j = x.RowBegin(r); j < x.RowEnd(r); ++j) {
      const uint64_t f = x.col_idx[j];
      if (f >= ranker.num_features || s->pair_mask[f] != 0) continue;
      const uint32_t pair = FindPairFast(ranker, f, label);
      if (pair == kNoPair) continue;  // a ranker built on other rows
      s->pair_mask[f] = 1;
      s->weight_of_feature[f] = ranker.weight[pair];
      s->touched.push_back(f);
      s->pair.push_back(pair);
    }
  }
}

void ClearLabelPairs(LabelScratch* s) {
  for (const uint64_t f : s->touched) s->weight_of_feature[f] = s->pair_mask[f] = 0;
  s->touched.clear();
}

// w . x_r + b over the label's weights in s (0 on the features it never met).
double LabelScore(const data::CsrMatrix& x, uint32_t r, double bias, uint64_t num_features, const LabelScratch& s) {
  double z = bias;
  for (uint64_t j = x.RowBegin(r); j < x.RowEnd(r); ++j) {
    const uint64_t f = x.col_idx[j];
    if (f < num_features) z += (x.binary() ? 1.0 : double(x.values[j])) * s.weight_of_feature[f];
  }
  return z;
}

// Solves one label's dual; returns the passes it took.
uint32_t SolveLabel(LinearRanker* ranker, const data::CsrMatrix& x, const RowsByLabel& index, uint32_t label,
                    const RankerDualOptions& options, LabelScratch* s) {
  const uint64_t first = index.begin[label], n = index.begin[label + 1] - first;
  ranker->bias[label] = 0;
  if (n == 0) return 0;
  MapLabelPairs(*ranker, x, index, label, s);
  for (const uint64_t f : s->touched) s->weight_of_feature[f] = 0;
  // The dual's diagonal: |x_i|^2 over the label's pairs, plus 1 for the bias's constant feature
  // and 1 / (2C) for the squared hinge.
  const double d = 0.5 / options.c;
  s->alpha.assign(n, 0.0);
  s->diagonal.resize(n);
  s->order.resize(n);
  for (uint64_t i = 0; i < n; ++i) {
    const uint32_t r = index.row[first + i];
    double q = 1.0 + d;
    for (uint64_t j = x.RowBegin(r); j < x.RowEnd(r); ++j) {
      const uint64_t f = x.col_idx[j];
      if (f < ranker->num_features && s->pair_mask[f] != 0) {
        const double v = x.binary() ? 1.0 : double(x.values[j]);
        q += v * v;
      }
    }
    s->diagonal[i] = q;
    s->order[i] = uint32_t(i);
  }
  std::mt19937_64 rng(0x72616e6b6572ULL ^ (uint64_t(label) * 0x9E3779B97F4A7C15ULL));  // "ranker"
  double bias = 0;  // kept in double: summed over every step
  uint32_t passes = 0;
  while (passes < options.max_passes) {
    if (options.stopped && options.stopped()) break;
    ++passes;
    std::shuffle(s->order.begin(), s->order.end(), rng);
    double highest = -std::numeric_limits<double>::infinity(), lowest = std::numeric_limits<double>::infinity();
    for (const uint32_t i : s->order) {
      const uint32_t r = index.row[first + i];
      const double y = index.positive[first + i] ? 1.0 : -1.0;
      double& alpha = s->alpha[i];
      const double gradient = y * LabelScore(x, r, bias, ranker->num_features, *s) - 1.0 + d * alpha;
      // The projected gradient: at the bound alpha = 0 only a negative gradient can move it.
      const double projected = alpha == 0 ? std::min(gradient, 0.0) : gradient;
      highest = std::max(highest, projected);
      lowest = std::min(lowest, projected);
      if (projected == 0) continue;
      const double moved = std::max(alpha - gradient / s->diagonal[i], 0.0);
      const double step = (moved - alpha) * y;
      alpha = moved;
      if (step == 0) continue;
      for (uint64_t j = x.RowBegin(r); j < x.RowEnd(r); ++j) {
        const uint64_t f = x.col_idx[j];
        if (f >= ranker->num_features) continue;
        if (f < ranker->num_features)
          s->weight_of_feature[f] += float(step * (x.binary() ? 1.0 : double(x.values[j]))) * s->pair_mask[f];
      }
      bias += step;
    }
    if (highest - lowest < options.tolerance) break;
  }
  for (size_t k = 0; k < s->pair.size(); ++k) ranker->weight[s->pair[k]] = s->weight_of_feature[s->touched[k]];
  ranker->bias[label] = float(bias);
  ClearLabelPairs(s);
  return passes;
}

}  // namespace

RankerDualReport TrainRankerDual(LinearRanker* ranker, const data::CsrMatrix& features, const data::CsrMatrix& labels,
                                 const uint32_t* shortlists, uint32_t shortlist_size, const RankerDualOptions& options) {
  if (features.num_rows != labels.num_rows)
    throw std::invalid_argument("the linear ranker's features and labels differ in their rows");
  if (!(options.c > 0) || options.max_passes == 0 || !(options.tolerance >= 0))
    throw std::invalid_argument("the linear ranker's solver needs C > 0, at least one pass and a tolerance >= 0");
  // Rows and pairs are held as 32-bit ids: the stage's limits (run/ranker_stage.h) are far below.
  if (features.num_rows >= kNoPair || ranker->num_pairs() >= kNoPair)
    throw std::invalid_argument("the linear ranker's solver takes fewer than 2^32 rows and pairs");
  if (ranker->num_labels > uint64_t(kNoPair))
    throw std::invalid_argument("the linear ranker's solver takes fewer than 2^32 labels");
  const RowsByLabel index = IndexRowsByLabel(ranker->num_labels, labels, shortlists, shortlist_size);
  const std::vector<uint8_t>* only = options.labels;
  if (only != nullptr && only->size() != ranker->num_labels)
    throw std::invalid_argument("the linear ranker's solver was given a label subset of another size");
  RankerDualReport report;
  report.instances = index.row.size();
  // Pairs of no candidate row keep 0.
  if (only == nullptr) {
    std::fill(ranker->weight.begin(), ranker->weight.end(), 0.0f);
  } else {
    for (uint64_t p = 0; p < ranker->num_pairs(); ++p)
      if ((*only)[ranker->pair_label[p]]) ranker->weight[p] = 0.0f;
  }
  std::vector<uint32_t> passes(ranker->num_labels, 0);
  tbb::enumerable_thread_specific<LabelScratch> scratches;
  // Each label writes only its own pairs and bias.
  tbb::parallel_for(tbb::blocked_range<uint64_t>(0, ranker->num_labels, 8), [&](const tbb::blocked_range<uint64_t>& chunk) {
    LabelScratch& s = scratches.local();
    for (uint64_t l = chunk.begin(); l < chunk.end(); ++l) {
      if (only != nullptr && !(*only)[l]) continue;
      if (options.stopped && options.stopped()) return;
      passes[l] = SolveLabel(ranker, features, index, uint32_t(l), options, &s);
    }
  });
  if (options.stopped && options.stopped()) {
    report.stopped = true;
    return report;
  }
  uint64_t solved = 0, total = 0;
  for (uint64_t l = 0; l < ranker->num_labels; ++l) {
    if (passes[l] == 0) continue;
    ++solved;
    total += passes[l];
    report.most_passes = std::max(report.most_passes, passes[l]);
    if (passes[l] == options.max_passes) ++report.labels_at_limit;
  }
  report.labels_solved = solved;
  report.total_passes = total;
  report.mean_passes = solved == 0 ? 0.0 : double(total) / double(solved);
  return report;
}

RankerDualReport CombineRankerDualReports(const RankerDualReport& a, const RankerDualReport& b) {
  RankerDualReport both;
  both.instances = std::max(a.instances, b.instances);  // the same rows' instances, counted by each
  both.most_passes = std::max(a.most_passes, b.most_passes);
  both.labels_at_limit = a.labels_at_limit + b.labels_at_limit;
  both.labels_solved = a.labels_solved + b.labels_solved;
  both.total_passes = a.total_passes + b.total_passes;
  both.mean_passes = both.labels_solved == 0 ? 0.0 : double(both.total_passes) / double(both.labels_solved);
  both.stopped = a.stopped || b.stopped;
  return both;
}

double RankerLabelObjective(const LinearRanker& ranker, const data::CsrMatrix& features, const data::CsrMatrix& labels,
                            const uint32_t* shortlists, uint32_t shortlist_size, uint32_t label, double c) {
  const RowsByLabel index = IndexRowsByLabel(ranker.num_labels, labels, shortlists, shortlist_size);
  LabelScratch s;
  MapLabelPairs(ranker, features, index, label, &s);
  double objective = 0.5 * double(ranker.bias[label]) * ranker.bias[label];
  for (const uint64_t f : s.touched) objective += 0.5 * double(s.weight_of_feature[f]) * s.weight_of_feature[f];
  for (uint64_t k = index.begin[label]; k < index.begin[label + 1]; ++k) {
    const double y = index.positive[k] ? 1.0 : -1.0;
    const double margin =
        std::max(0.0, 1.0 - y * LabelScore(features, index.row[k], ranker.bias[label], ranker.num_features, s));
    objective += c * margin * margin;
  }
  return objective;
}

}  // namespace xmlt::kernels
