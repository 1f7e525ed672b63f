// The global momentum update of the model-averaging merges (kHeavy: w' = sum_i alpha_i w_i +
// gamma (w - w_p); kNesterov: w' = sum_i alpha_i w_i, replicas restart from w' + gamma (w' - w));
// w_p <- w; w <- w', run through a collective.
#pragma once

#include <vector>

#include "merge/collective.h"
#include "merge/global_model.h"
#include "merge/merger.h"
#include "merge/replica_set.h"

namespace xmlt::merge {

// The collective's finish step for the rule above: reads and rewrites w and w_p on the host
// (global->MutableCurrent(), MutablePrevious()) block by block, so it needs no buffer beyond them.
// It leaves in `values` what every replica starts the next round from: w' under kHeavy, the
// look-ahead w' + gamma (w' - w) under kNesterov (w always receives w', never the look-ahead).
// With start_weight != 0 (replicas in bf16, start_weight the sum of the alpha_i), the replicas began
// the round from their start rounded to nearest (w, or its look-ahead), not from the start itself:
// the sum is first moved by start_weight (start - rounded start), so that w' takes each replica's
// change from where it began, as with fp32 replicas, and the rounding never enters w.
FinishBlock GlobalMomentumFinish(GlobalModel* global, double momentum,
                                 MomentumMode mode = MomentumMode::kHeavy, double start_weight = 0);

// Runs the rule with the given alpha_i (not renormalized); every replica ends equal to w' (kHeavy)
// or to its look-ahead (kNesterov).
void MergeWithGlobalMomentum(Collective& collective, const ReplicaSet& replicas,
                             const std::vector<double>& weights, double momentum,
                             GlobalModel* global, MomentumMode mode = MomentumMode::kHeavy);

}  // namespace xmlt::merge
