// The MLP's shortlist re-scored by the linear ranker; see shortlist_ranker.h.
#include "kernels/shortlist_ranker.h"

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

namespace {

// The order of `count` blended scores, best first, ties kept in the MLP's order.
void OrderByScore(const float* scores, uint32_t count, std::vector<uint32_t>* order) {
  order->resize(count);
  std::iota(order->begin(), order->end(), 0u);
  std::stable_sort(order->begin(), order->end(), [&](uint32_t a, uint32_t b) { return scores[a] > scores[b]; });
}

}  // namespace

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

std::vector<float> BlendGrid() {
  std::vector<float> grid;
  for (int tenth = 0; tenth <= 10; ++tenth) grid.push_back(float(tenth) / 10.0f);
  return grid;
}

BlendChoice ChooseBlend(const data::CsrMatrix& labels, const uint32_t* shortlists, const float* probabilities,
                        const float* linear_scores, uint32_t shortlist_size) {
  constexpr uint32_t depth = RankingAccumulator::kDepth;
  BlendChoice choice;
  std::vector<float> blended(shortlist_size);
  std::vector<uint32_t> order, top(depth);
  for (uint32_t f = 0; f < kBlendForms; ++f) {
    const auto form = BlendForm(f);
    for (const float blend : BlendGrid()) {
      if (blend == 0.0f && form != BlendForm::kArithmetic) continue;  // the MLP alone, tried once
      RankingAccumulator accumulator;
      for (uint64_t r = 0; r < labels.num_rows; ++r) {
        const uint64_t at = r * shortlist_size;
        for (uint32_t i = 0; i < shortlist_size; ++i)
          blended[i] = BlendScore(form, blend, linear_scores[at + i], probabilities[at + i]);
        OrderByScore(blended.data(), shortlist_size, &order);
        // A shortlist shorter than the metrics' depth leaves places no label fills.
        for (uint32_t i = 0; i < depth; ++i) top[i] = i < shortlist_size ? shortlists[at + order[i]] : UINT32_MAX;
        accumulator.AddRow(top.data(), labels.col_idx.data() + labels.RowBegin(r), uint32_t(labels.RowSize(r)));
      }
      BlendTrial trial;
      trial.form = form;
      trial.blend = blend;
      trial.metrics = accumulator.Mean();
      trial.mean_precision = (trial.metrics.p1 + trial.metrics.p3 + trial.metrics.p5) / 3.0;
      choice.trials.push_back(trial);
    }
  }
  // Strictly better only: a tie keeps the smaller blend, tried first.
  size_t best = 0;
  for (size_t i = 1; i < choice.trials.size(); ++i)
    if (choice.trials[i].mean_precision > choice.trials[best].mean_precision) best = i;
  choice.chosen = best;
  choice.form = choice.trials[best].form;
  choice.blend = choice.trials[best].blend;
  return choice;
}

}  // namespace xmlt::kernels
