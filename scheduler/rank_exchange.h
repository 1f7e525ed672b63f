// What the ranks of a run spanning several processes tell each other. Every rank runs the same
// plan over every device (scheduler/dealer.h); only the owner of a device trains its batches,
// so after each mega-batch the owners' results go to every rank, and before a merge or a
// checkpoint the replicas do. Every function is collective: every rank calls it at the same point.
#pragma once

#include <cstdint>
#include <vector>

#include "engine/device.h"
#include "engine/evaluator.h"
#include "engine/worker.h"
#include "ranks/rank_group.h"

namespace xmlt::scheduler {

// results[k] is batch k of the plan, trained on device devices[k]; each rank holds the results of
// its own devices' batches (device_rank[d] == its rank) and placeholders for the others. Afterwards
// every rank holds every result: counts, losses, times, and failures (as a std::runtime_error
// carrying the owner's message).
void ShareBatchResults(ranks::RankGroup& ranks, const std::vector<int>& device_rank,
                       const std::vector<size_t>& devices, std::vector<engine::BatchResult>* results);

// The parameters of devices[k] (device ids[k]), copied from its owner into every other rank's
// mirror of it: for the merges that read every replica on every rank. A replica with bf16 weights
// travels as its bits into a bf16 mirror.
void SendReplicasToEveryRank(ranks::RankGroup& ranks, const std::vector<int>& device_rank,
                             const std::vector<size_t>& ids, const std::vector<engine::Device*>& devices);

// The parameters, local momentum and extra state of devices[k], copied from its owner into rank
// `root`'s mirror of it, for a checkpoint that `root` writes; no other rank makes or fills a mirror.
void SendReplicasToRoot(ranks::RankGroup& ranks, int root, const std::vector<int>& device_rank,
                        const std::vector<size_t>& ids, const std::vector<engine::Device*>& devices);

// parts[k] is filled on the rank that owns owner[k]; afterwards every rank holds all of them.
void ShareEvaluations(ranks::RankGroup& ranks, const std::vector<int>& owner,
                      std::vector<engine::EvaluationSums>* parts);

// The batches one rank dealt to its own devices in a mega-batch on the wall clock, where each
// rank deals its share of the rows alone (rank_share_dealer.cc): every rank learns every rank's, in order.
struct DealtBatch {
  uint64_t device = 0, offset = 0, count = 0;  // offset and count in the mega-batch's row arena
  double slowdown = 1;
};
struct RankDeal {
  std::vector<DealtBatch> batches;  // in the order the rank dealt them
  uint64_t dealt_to = 0;            // the arena position its share was dealt up to
  double span_s = 0;                // how long its devices took, on its wall clock
};
std::vector<RankDeal> ShareDeals(ranks::RankGroup& ranks, const RankDeal& mine);

// The largest of every rank's `value` (a stop signal seen by any rank stops them all).
int AgreeOnMax(ranks::RankGroup& ranks, int value);
// The largest of every rank's `value` (a wall-clock time every rank must book alike).
double AgreeOnMax(ranks::RankGroup& ranks, double value);
// Rank `root`'s value on every rank (a measured cost that must be the same everywhere).
double FromRank(ranks::RankGroup& ranks, double value, int root);

}  // namespace xmlt::scheduler
