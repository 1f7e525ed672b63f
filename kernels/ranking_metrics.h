// Precision@k and nDCG@k, the XML-repository definitions: P@k = hits in the top k / k;
// nDCG@k = DCG@k / ideal DCG@k with gains 1/log2(rank+1) and the ideal over min(k, |Y|) labels.
// A row without labels scores zero on every metric but still counts in the mean.
#pragma once

#include <cstdint>

namespace xmlt::kernels {

struct RankingMetrics {
  double p1 = 0, p3 = 0, p5 = 0, ndcg3 = 0, ndcg5 = 0;
};

// Sums over rows, turned into means by Mean().
class RankingAccumulator {
 public:
  static constexpr uint32_t kDepth = 5;  // top-k labels needed per row

  // top: the row's kDepth best labels, best first; labels: the row's true labels, sorted.
  void AddRow(const uint32_t* top, const uint32_t* labels, uint32_t num_labels);
  void Merge(const RankingAccumulator& other);
  RankingMetrics Mean() const;
  uint64_t rows() const { return rows_; }

 private:
  RankingMetrics sum_;
  uint64_t rows_ = 0;
};

}  // namespace xmlt::kernels
