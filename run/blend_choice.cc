// The choice of the ranker's blend; see blend_choice.h.
#include "run/blend_choice.h"

namespace xmlt::run {

std::vector<float> BlendGrid() {
  std::vector<float> grid;
  for (int tenth = 0; tenth <= 10; ++tenth) grid.push_back(float(tenth) / 10.0f);
  return grid;
}

BlendChoice ChooseBlend(const data::CsrMatrix& labels, const uint32_t* shortlists, const float* probabilities,
                        const float* linear_scores, uint32_t shortlist_size) {
  constexpr uint32_t depth = kernels::TopKAccumulator::kDepth;
  BlendChoice choice;
  std::vector<float> blended(shortlist_size);
  std::vector<uint32_t> order, top(depth);
  for (uint32_t f = 0; f < kernels::kBlendForms; ++f) {
    const auto form = kernels::BlendForm(f);
    for (const float blend : BlendGrid()) {
      if (blend == 0.0f && form != kernels::BlendForm::kArithmetic) continue;  // the MLP alone, tried once
      kernels::TopKAccumulator accumulator;
      for (uint64_t r = 0; r < labels.num_rows; ++r) {
        const uint64_t at = r * shortlist_size;
        for (uint32_t i = 0; i < shortlist_size; ++i)
          blended[i] = kernels::BlendScore(form, blend, linear_scores[at + i], probabilities[at + i]);
        kernels::OrderByScore(blended.data(), shortlist_size, &order);
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

}  // namespace xmlt::run
