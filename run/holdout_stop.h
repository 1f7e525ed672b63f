// When the rows held out of training (the ranker's, apps/train_ranker.h) end a run before its
// planned epochs. The cosine schedule is planned over those epochs and is never shortened: its
// last epochs, at a small fraction of the rate, are cut once the held-out rows stop gaining from
// them. Earlier in the schedule a plateau is not a stop: the small sets gain their last half point
// of P@5 in the annealed epochs (docs/experiments/mlp-for-the-ranker.md, "Held-out rows deciding
// the stop").
#pragma once

#include <cstdint>
#include <vector>

namespace xmlt::run {

struct HoldoutStopRule {
  double watch_below_lr_scale = 0.2;  // watched only once the schedule's factor is below this
  double min_gain = 0.0005;           // a gain of the held-out score smaller than this is none
  uint32_t patience = 2;              // watched epochs in a row without a gain
  // Fewer held-out rows are never watched: their score moves from one tail epoch to the next by
  // more than min_gain by chance alone. Estimated from the test rows' moves, scaled by the root of
  // the rows: Bibtex's 488 held-out rows 0.0006 to 0.0024 an epoch, Delicious's 1,292 0.0012,
  // EURLEX57K's 4,500 0.0004.
  uint64_t min_rows = 2000;
};

// One score of the held-out rows (the mean of P@1, P@3 and P@5, as the ranker's blend is chosen
// by), taken at the end of a watched epoch.
struct HoldoutScore {
  uint64_t epoch = 0;
  double score = 0;
};

// Whether the run stops after the last of `scores` (every watched epoch so far, in order): the
// last `rule.patience` of them each failed to beat the best before them by more than
// `rule.min_gain`. Fewer scores than patience + 1 never stop.
bool HoldoutStops(const std::vector<HoldoutScore>& scores, const HoldoutStopRule& rule = {});

}  // namespace xmlt::run
