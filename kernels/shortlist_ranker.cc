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
  std::vector<float> blended(count);
  RankerScores(ranker.linear, features, row, labels, count, blended.data(), scratch);
  for (uint32_t i = 0; i < count; ++i) blended[i] = BlendScore(ranker.form, ranker.blend, blended[i], probabilities[i]);
  const uint32_t head = std::min(count, ranker.shortlist);
  std::vector<uint32_t> order;
  OrderByScore(blended.data(), head, &order);
  for (uint32_t i = 0; i < count; ++i) {
    const uint32_t from = i < head ? order[i] : i;
    out_labels[i] = labels[from];
    out_scores[i] = blended[from];
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
