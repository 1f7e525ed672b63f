// The MLP's shortlist re-scored by the linear ranker; see shortlist_ranker.h.
#include "kernels/ranker/shortlist_ranker.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace xmlt::kernels {

const char* BlendFormName(BlendForm form) { return form == BlendForm::kGeometric ? "geometric" : "arithmetic"; }

float BlendScore(BlendForm form, float blend, float linear_score, float probability) {
  const float sigmoid = 1.0f / (1.0f + std::exp(-linear_score));
  if (form == BlendForm::kGeometric) return std::pow(sigmoid, blend) * std::pow(probability, 1.0f - blend);
  return blend * sigmoid + (1.0f - blend) * probability;
}

void OrderByScore(const float* scores, uint32_t count, std::vector<uint32_t>* order) {
  order->resize(count);
  std::iota(order->begin(), order->end(), 0u);
  std::stable_sort(order->begin(), order->end(), [&](uint32_t a, uint32_t b) { return scores[a] > scores[b]; });
}

void RerankShortlist(const ShortlistRanker& ranker, const data::CsrMatrix& features, uint64_t row,
                     const uint32_t* labels, const float* probabilities, uint32_t count, uint32_t* out_labels,
                     float* out_scores, RankerScratch* scratch) {
  const uint32_t head = std::min(count, ranker.shortlist);
  if (head == 0) return;
  std::vector<float> blended(head);
  RankerScores(ranker.linear, features, row, labels, head, blended.data(), scratch);
  const float floor = *std::min_element(blended.begin(), blended.end());
  for (uint32_t i = 0; i < head; ++i) blended[i] = BlendScore(ranker.form, ranker.blend, blended[i], probabilities[i]);
  std::vector<uint32_t> order;
  OrderByScore(blended.data(), head, &order);
  for (uint32_t i = 0; i < head; ++i) {
    out_labels[i] = labels[order[i]];
    out_scores[i] = blended[order[i]];
  }
  // Past the shortlist the ranker has not looked: each label is blended as if the ranker gave it
  // the shortlist's lowest score. The blend rises with both of its scores, and these labels come
  // after the shortlist in the MLP's order (probabilities no higher), so they keep that order and
  // none scores above a shortlisted label. The min only absorbs exp's and pow's last-bit rounding.
  for (uint32_t i = head; i < count; ++i) {
    out_labels[i] = labels[i];
    out_scores[i] = std::min(out_scores[i - 1], BlendScore(ranker.form, ranker.blend, floor, probabilities[i]));
  }
}

}  // namespace xmlt::kernels
