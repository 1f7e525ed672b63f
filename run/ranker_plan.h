// Whether the shortlist ranker's stage (ranker_stage.h) is fitted, decided before training, from
// counts alone: enough rows to hold out for the blend's choice (or to choose it by folds), its pairs within kMaxRankerPairs,
// and its stage after training within the host memory (scheduler::PlanRankerMemory). A ranker
// that does not fit is left out before any row is held out, never after training.
#pragma once

#include <cstdint>

#include "data/dataset.h"
#include "kernels/model.h"
#include "run/ranker_stage.h"
#include "scheduler/memory_plan.h"

namespace xmlt::run {

// The stage's host memory for `kept` training rows of `train` (its entries counted whole: a
// bound for any of its rows), `held_out` rows to choose on (by folds, every row, scored out of its
// fold) and `pairs` (feature, label) pairs, on the threads TBB allows.
scheduler::RankerMemory RankerStageMemory(const RankerOptions& options, const kernels::ModelShape& shape,
                                          const data::Dataset& train, uint64_t kept, uint64_t held_out,
                                          uint64_t pairs, bool by_folds);

struct RankerPlan {
  enum class Verdict { kFits, kTooFewRows, kTooManyPairs, kTooLittleMemory };
  Verdict verdict = Verdict::kFits;
  uint64_t held_out = 0;  // HoldoutRows
  uint32_t folds = 0;     // BlendFolds: > 0 when the blend is chosen by folds instead
  // RankerPairBound, or the exact count (kernels::CountLinearRankerPairs) where the bound does not
  // fit; 0 with too few rows.
  uint64_t pairs = 0;
  scheduler::RankerMemory memory;  // the stage's, for those pairs
  bool fits() const { return verdict == Verdict::kFits; }
};

// Plans the ranker of `options` (enabled) on `train`, before any row is held out, against
// `available` bytes of host memory (0: unknown, not checked).
RankerPlan PlanRanker(const RankerOptions& options, const kernels::ModelShape& shape, const data::Dataset& train,
                      uint64_t available);

}  // namespace xmlt::run
