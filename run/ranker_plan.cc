// The ranker planned before training; see ranker_plan.h.
#include "run/ranker_plan.h"

#include <tbb/task_arena.h>

#include "kernels/ranker/linear_ranker.h"
#include "run/fold_blend_choice.h"

namespace xmlt::run {

scheduler::RankerMemory RankerStageMemory(const RankerOptions& options, const kernels::ModelShape& shape,
                                          const data::Dataset& train, uint64_t kept, uint64_t held_out,
                                          uint64_t pairs, bool by_folds) {
  scheduler::RankerMemoryShape r;
  r.rows = kept;
  r.feature_nnz = train.features.nnz();
  r.label_nnz = train.labels.nnz();
  r.holdout_rows = held_out;
  r.shortlist = options.shortlist;
  r.pairs = pairs;
  r.threads = uint64_t(tbb::this_task_arena::max_concurrency());
  scheduler::RankerMemory memory = scheduler::PlanRankerMemory(shape, r);
  memory.by_folds = by_folds && memory.mlp > 0;
  return memory;
}

RankerPlan PlanRanker(const RankerOptions& options, const kernels::ModelShape& shape, const data::Dataset& train,
                      uint64_t available) {
  RankerPlan plan;
  plan.held_out = HoldoutRows(options, train.num_rows());
  plan.folds = BlendFolds(options, train.num_rows());
  if (plan.held_out == 0 && plan.folds == 0 && options.choose_blend()) {
    plan.verdict = RankerPlan::Verdict::kTooFewRows;
    return plan;
  }
  const uint64_t kept = train.num_rows() - plan.held_out;
  // By folds, every row is scored out of its fold, as held-out rows are.
  const uint64_t scored = plan.folds > 0 ? train.num_rows() : plan.held_out;
  const auto fits = [&](uint64_t pairs) {
    plan.memory = RankerStageMemory(options, shape, train, kept, scored, pairs, plan.folds > 0);
    return pairs <= kMaxRankerPairs && (available == 0 || plan.memory.total() <= available);
  };
  // Bounded first (a pass over the rows); counted only where the bound does not fit.
  plan.pairs = RankerPairBound(train);
  if (fits(plan.pairs)) return plan;
  plan.pairs = kernels::CountLinearRankerPairs(train);
  if (fits(plan.pairs)) return plan;
  plan.verdict = plan.pairs > kMaxRankerPairs ? RankerPlan::Verdict::kTooManyPairs
                                              : RankerPlan::Verdict::kTooLittleMemory;
  return plan;
}

}  // namespace xmlt::run
