// The hierarchical collective of a run over several ranks: each rank sums its own devices'
// replicas on its local collective, the ranks add their partial sums (ranks::RankGroup, a
// reduce-scatter then an all-gather), and every rank finishes the total (the global momentum) and
// writes it into its own replicas. A replica of another rank's device is neither read nor written
// (its pointer may be null), so the model crosses the network once per merge as one partial sum,
// not once per device.
#pragma once

#include <cstddef>
#include <memory>
#include <vector>

#include "merge/collective.h"
#include "ranks/rank_group.h"

namespace xmlt::merge {

// Values of the fp32 partial sums of bf16 replicas summed across ranks at a time (16 MiB).
inline constexpr size_t kRankSumBf16Chunk = size_t(1) << 22;

// `is_local[i]` says whether replica i of the ReplicaSets this collective is given belongs to this
// rank. The weighted sum is the same real number as the one-process sum but rounded in another
// order (per rank, then across ranks), so it is close to, not the same bits as, `local` over all
// replicas; every rank gets the same bits. Replicas that keep bf16 weights (every one of the
// run's, or none: ReplicaSet::weights_in_bf16) cannot carry the rank's partial sum: it is summed
// across ranks in fp32, kRankSumBf16Chunk values at a time, and the finished total is given to
// this rank's replicas rounded to nearest (merge/replica_blocks.h). SquaredNorms gives each replica's norm as `local`
// computes it, from the rank that holds it. Throws std::invalid_argument on a replica count other
// than is_local.size(). `ranks` must outlive the collective.
std::unique_ptr<Collective> MakeRankSumCollective(std::unique_ptr<Collective> local, ranks::RankGroup& ranks,
                                                  std::vector<bool> is_local);

}  // namespace xmlt::merge
