// Which merge a run's rule runs where its replicas are: one table of {rule} x {host, GPUs}
// (--merge, --elastic-alpha against MergesOnGpus), in the manner of LightGBM's CreateTreeLearner.
#pragma once

#include <cstddef>
#include <memory>
#include <vector>

#include "merge/merger.h"
#include "merge/replica_set.h"
#include "ranks/rank_group.h"
#include "scheduler/train_options.h"

namespace xmlt::run {

// Where a merge runs: on the host, over the devices' mirrors; or on the GPUs, over the replicas
// where they are, keeping the global model there (merge/gpu/).
enum class MergePlace { kHost, kGpus };

struct MergeSite {
  MergePlace place = MergePlace::kHost;
  // On the host: the alive devices; across ranks, whether each is this rank's (empty otherwise).
  size_t devices = 0;
  std::vector<bool> is_local;
  // On the GPUs: the replicas (on GPUs; another rank's null); across ranks, each one's rank (empty
  // otherwise): the weighted sums then run on one NCCL communicator over every rank's GPUs.
  const merge::ReplicaSet* replicas = nullptr;
  std::vector<int> owners;
  // Across ranks (is_local or owners given): the group the ranks sum in.
  ranks::RankGroup* ranks = nullptr;
};

// The merge of `scheduling.merge`, under `scheduling.merge_rule`, at `site`. Throws std::logic_error for
// the GPUs without the CUDA backend, and what the merges' factories throw on bad options.
std::unique_ptr<merge::Merger> CreateMerger(const scheduler::SchedulerOptions& scheduling, const MergeSite& site);

}  // namespace xmlt::run
