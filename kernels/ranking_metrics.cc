// Ranking metrics; see ranking_metrics.h.
#include "kernels/ranking_metrics.h"

#include <algorithm>
#include <cmath>

namespace xmlt::kernels {

void RankingAccumulator::AddRow(const uint32_t* top, const uint32_t* labels, uint32_t num_labels) {
  ++rows_;
  if (num_labels == 0) return;
  double hits[kDepth + 1] = {0};   // hits[k]: hits among the first k
  double dcg[kDepth + 1] = {0};    // dcg[k]
  double ideal[kDepth + 1] = {0};  // ideal dcg[k]
  for (uint32_t i = 0; i < kDepth; ++i) {
    const bool hit = std::binary_search(labels, labels + num_labels, top[i]);
    const double gain = 1.0 / std::log2(double(i) + 2.0);
    hits[i + 1] = hits[i] + (hit ? 1 : 0);
    dcg[i + 1] = dcg[i] + (hit ? gain : 0);
    ideal[i + 1] = ideal[i] + (i < num_labels ? gain : 0);
  }
  sum_.p1 += hits[1];
  sum_.p3 += hits[3] / 3;
  sum_.p5 += hits[5] / 5;
  sum_.ndcg3 += dcg[3] / ideal[3];
  sum_.ndcg5 += dcg[5] / ideal[5];
}

void RankingAccumulator::Merge(const RankingAccumulator& other) {
  sum_.p1 += other.sum_.p1;
  sum_.p3 += other.sum_.p3;
  sum_.p5 += other.sum_.p5;
  sum_.ndcg3 += other.sum_.ndcg3;
  sum_.ndcg5 += other.sum_.ndcg5;
  rows_ += other.rows_;
}

RankingMetrics RankingAccumulator::Mean() const {
  if (rows_ == 0) return {};
  const double n = double(rows_);
  return {sum_.p1 / n, sum_.p3 / n, sum_.p5 / n, sum_.ndcg3 / n, sum_.ndcg5 / n};
}

}  // namespace xmlt::kernels
