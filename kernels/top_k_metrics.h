// Precision@k and nDCG@k, the XML-repository definitions: P@k = hits in the top k / k;
// nDCG@k = DCG@k / ideal DCG@k with gains 1/log2(rank+1) and the ideal over min(k, |Y|) labels.
// A row without labels scores zero on every metric but still counts in the mean.
//
// With inverse propensities (kernels/propensity.h), also the propensity-scored metrics of Jain,
// Prabhu and Varma (2016), normalized as the extreme classification repository's tools do
// (pyxclib's psprecision and psndcg): a hit on label l gains w_l = 1/p_l instead of 1, and the sum
// over all rows is divided by the same sum for the best possible ranking, each row's true labels
// ordered by w. PSP@k = sum_rows sum_{top k} hit w / k over sum_rows sum_{best k} w / k; PSnDCG@k
// the same with the gains 1/log2(rank+1), each row's terms divided by its ideal DCG@k. 1 means every
// row ranks its rarest true labels first.
#pragma once

#include <cstdint>

namespace xmlt::kernels {

struct TopKMetrics {
  double p1 = 0, p3 = 0, p5 = 0, ndcg3 = 0, ndcg5 = 0;
  bool propensity_scored = false;  // the five below were computed
  double psp1 = 0, psp3 = 0, psp5 = 0, psndcg3 = 0, psndcg5 = 0;
};

// Sums over rows, turned into means by Mean(). Plain values only: the sums travel between ranks
// as bytes.
class TopKAccumulator {
 public:
  static constexpr uint32_t kDepth = 5;  // top-k labels needed per row

  // top: the row's kDepth best labels, best first; labels: the row's true labels, sorted.
  // inverse_propensity: w_l for every label id of the evaluation (weights_size of them), or null
  // for no propensity-scored metrics; every row of one accumulator must give it or none.
  void AddRow(const uint32_t* top, const uint32_t* labels, uint32_t num_labels,
              const float* inverse_propensity = nullptr, uint64_t weights_size = 0);
  void Merge(const TopKAccumulator& other);
  TopKMetrics Mean() const;
  uint64_t rows() const { return rows_; }

 private:
  TopKMetrics sum_;
  uint64_t rows_ = 0;
  // The propensity-scored sums: numerators (the ranking) and denominators (the best ranking) at
  // k = 1, 3, 5 (precision) and 3, 5 (nDCG).
  double psp_num_[3] = {0, 0, 0}, psp_den_[3] = {0, 0, 0};
  double psndcg_num_[2] = {0, 0}, psndcg_den_[2] = {0, 0};
};

}  // namespace xmlt::kernels
