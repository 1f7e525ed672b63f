// The MLP's shortlist re-scored by the linear ranker (linear_ranker.h): each of the MLP's top
// `shortlist` labels for a row gets a blend of sigmoid(linear score) and the MLP's probability,
// and the shortlist is ranked again by that. The blend's form and weight a are chosen on rows
// neither model trained on (run/blend_choice.h): on EURLEX57K the linear model ranks the first label
// better than the MLP, on Delicious far worse, so no one value suits every set
// (docs/experiments/peers.md).
#pragma once

#include <cstdint>
#include <vector>

#include "data/csr_matrix.h"
#include "kernels/ranker/linear_ranker.h"

namespace xmlt::kernels {

// How the two scores combine, with s = sigmoid(linear score) and p the MLP's probability:
// kArithmetic a s + (1 - a) p; kGeometric s^a p^(1 - a). The arithmetic blend lets the linear
// model decide the lower places, where the MLP's probabilities are small; the geometric one keeps
// the MLP's ratios there.
enum class BlendForm : uint32_t { kArithmetic = 0, kGeometric = 1 };
inline constexpr uint32_t kBlendForms = 2;
const char* BlendFormName(BlendForm form);

struct ShortlistRanker {
  LinearRanker linear;
  uint32_t shortlist = 50;  // how many of the MLP's best labels a row re-scores
  BlendForm form = BlendForm::kArithmetic;
  float blend = 0;  // a, in [0, 1]: 0 keeps the MLP's order
};

inline constexpr uint32_t kMaxShortlist = 1000;
// The dense lookups (AddDenseLookups) a ranker gets, in training and when loaded.
inline constexpr uint64_t kRankerDenseLookupBytes = uint64_t{256} << 20;

// The blend of sigmoid(linear_score) and probability (BlendForm).
float BlendScore(BlendForm form, float blend, float linear_score, float probability);

// The order of `count` blended scores, best first, ties kept in their given (the MLP's) order.
void OrderByScore(const float* scores, uint32_t count, std::vector<uint32_t>* order);

// Re-ranks one row's MLP top list (`labels` and their `probabilities`, best first, `count` of
// them): the first min(count, ranker.shortlist), the shortlist, are blended and sorted by the
// blend, best first (ties keep the MLP's order); the rest follow in the MLP's order, each scored
// by the blend of its probability with the lowest linear score of the row's shortlist. So the
// scores never rise down the list, for any count, and the first k of a longer list are the list
// of k. Writes `count` labels and scores to out_labels and out_scores (they may not alias the
// inputs).
void RerankShortlist(const ShortlistRanker& ranker, const data::CsrMatrix& features, uint64_t row,
                     const uint32_t* labels, const float* probabilities, uint32_t count, uint32_t* out_labels,
                     float* out_scores, RankerScratch* scratch);

}  // namespace xmlt::kernels
