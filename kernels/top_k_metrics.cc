// Top-k metrics; see top_k_metrics.h.
#include "kernels/top_k_metrics.h"

#include <algorithm>
#include <cmath>
#include <utility>

namespace xmlt::kernels {

void TopKAccumulator::AddRow(const uint32_t* top, const uint32_t* labels, uint32_t num_labels,
                                const float* inverse_propensity, uint64_t weights_size) {
  ++rows_;
  if (inverse_propensity != nullptr) sum_.propensity_scored = true;
  if (num_labels == 0) return;
  double hits[kDepth + 1] = {0};   // hits[k]: hits among the first k
  double dcg[kDepth + 1] = {0};    // dcg[k]
  double ideal[kDepth + 1] = {0};  // ideal dcg[k]
  double weighted[kDepth + 1] = {0}, weighted_dcg[kDepth + 1] = {0};  // the same, hits gaining w
  // Callers size the weights to every label of the evaluation; an id beyond them gains nothing.
  auto weight = [&](uint32_t label) { return label < weights_size ? double(inverse_propensity[label]) : 0.0; };
  for (uint32_t i = 0; i < kDepth; ++i) {
    const bool hit = std::binary_search(labels, labels + num_labels, top[i]);
    const double gain = 1.0 / std::log2(double(i) + 2.0);
    hits[i + 1] = hits[i] + (hit ? 1 : 0);
    dcg[i + 1] = dcg[i] + (hit ? gain : 0);
    ideal[i + 1] = ideal[i] + (i < num_labels ? gain : 0);
    const double w = hit && inverse_propensity != nullptr ? weight(top[i]) : 0.0;
    weighted[i + 1] = weighted[i] + w;
    weighted_dcg[i + 1] = weighted_dcg[i] + w * gain;
  }
  sum_.p1 += hits[1];
  sum_.p3 += hits[3] / 3;
  sum_.p5 += hits[5] / 5;
  sum_.ndcg3 += dcg[3] / ideal[3];
  sum_.ndcg5 += dcg[5] / ideal[5];
  if (inverse_propensity == nullptr) return;

  // The best ranking: the row's true labels by descending w, the first kDepth of them.
  double best[kDepth] = {0};
  for (uint32_t j = 0; j < num_labels; ++j) {
    double w = weight(labels[j]);
    for (uint32_t i = 0; i < kDepth; ++i)
      if (w > best[i]) std::swap(w, best[i]);
  }
  double best_sum[kDepth + 1] = {0}, best_dcg[kDepth + 1] = {0};
  for (uint32_t i = 0; i < kDepth; ++i) {
    best_sum[i + 1] = best_sum[i] + best[i];
    best_dcg[i + 1] = best_dcg[i] + best[i] / std::log2(double(i) + 2.0);
  }
  const uint32_t ks[3] = {1, 3, 5};
  for (int i = 0; i < 3; ++i) {
    psp_num_[i] += weighted[ks[i]] / ks[i];
    psp_den_[i] += best_sum[ks[i]] / ks[i];
  }
  for (int i = 0; i < 2; ++i) {
    const uint32_t k = ks[i + 1];
    psndcg_num_[i] += weighted_dcg[k] / ideal[k];
    psndcg_den_[i] += best_dcg[k] / ideal[k];
  }
}

void TopKAccumulator::Merge(const TopKAccumulator& other) {
  sum_.p1 += other.sum_.p1;
  sum_.p3 += other.sum_.p3;
  sum_.p5 += other.sum_.p5;
  sum_.ndcg3 += other.sum_.ndcg3;
  sum_.ndcg5 += other.sum_.ndcg5;
  sum_.propensity_scored = sum_.propensity_scored || other.sum_.propensity_scored;
  for (int i = 0; i < 3; ++i) {
    psp_num_[i] += other.psp_num_[i];
    psp_den_[i] += other.psp_den_[i];
  }
  for (int i = 0; i < 2; ++i) {
    psndcg_num_[i] += other.psndcg_num_[i];
    psndcg_den_[i] += other.psndcg_den_[i];
  }
  rows_ += other.rows_;
}

TopKMetrics TopKAccumulator::Mean() const {
  if (rows_ == 0) return {};
  const double n = double(rows_);
  TopKMetrics mean{sum_.p1 / n, sum_.p3 / n, sum_.p5 / n, sum_.ndcg3 / n, sum_.ndcg5 / n};
  mean.propensity_scored = sum_.propensity_scored;
  if (mean.propensity_scored) {
    auto ratio = [](double num, double den) { return den > 0 ? num / den : 0.0; };
    mean.psp1 = ratio(psp_num_[0], psp_den_[0]);
    mean.psp3 = ratio(psp_num_[1], psp_den_[1]);
    mean.psp5 = ratio(psp_num_[2], psp_den_[2]);
    mean.psndcg3 = ratio(psndcg_num_[0], psndcg_den_[0]);
    mean.psndcg5 = ratio(psndcg_num_[1], psndcg_den_[1]);
  }
  return mean;
}

}  // namespace xmlt::kernels
