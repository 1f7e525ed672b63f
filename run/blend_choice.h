// The choice of the shortlist ranker's blend (kernels/ranker/shortlist_ranker.h): a policy that
// picks a model on rows neither the MLP nor the ranker trained on. On EURLEX57K the linear model
// ranks the first label better than the MLP, on Delicious far worse, so no one form and weight
// suits every set (docs/experiments/peers.md). The stage after training (ranker_stage.h) runs it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "data/csr_matrix.h"
#include "kernels/ranker/shortlist_ranker.h"
#include "kernels/top_k_metrics.h"

namespace xmlt::run {

// What each blend gives on held-out rows: P@1, P@3 and P@5 over the rows (unlabelled rows count as
// misses), and their mean, by which a blend is chosen.
struct BlendTrial {
  kernels::BlendForm form = kernels::BlendForm::kArithmetic;
  float blend = 0;
  kernels::TopKMetrics metrics;
  double mean_precision = 0;  // (P@1 + P@3 + P@5) / 3
};

struct BlendChoice {
  kernels::BlendForm form = kernels::BlendForm::kArithmetic;
  float blend = 0;
  std::vector<BlendTrial> trials;  // one per blend tried, in the order tried
  size_t chosen = 0;               // the trial of `form` and `blend`
};

// The weights tried in each form: 0, 0.1, ..., 1 (0, the MLP alone, in the arithmetic form only).
std::vector<float> BlendGrid();

// Tries every form with every weight of BlendGrid on the held-out rows and keeps the blend of the
// highest mean precision (ties to the one tried first: the MLP alone, then smaller weights, the
// arithmetic form first). Per row r of `labels` (the rows'
// true labels), shortlists + r * shortlist_size hold the MLP's best labels, best first, with their
// probabilities in `probabilities` and the linear model's scores in `linear_scores`, in the same
// places.
BlendChoice ChooseBlend(const data::CsrMatrix& labels, const uint32_t* shortlists, const float* probabilities,
                        const float* linear_scores, uint32_t shortlist_size);

}  // namespace xmlt::run
