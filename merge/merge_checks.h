// The argument checks every merge makes before it touches a replica or the global model.
#pragma once

#include <string>

#include "merge/global_model.h"
#include "merge/merger.h"
#include "merge/replica_set.h"

namespace xmlt::merge {

// Throws std::invalid_argument unless there is at least one replica, no replica pointer is null
// (with other_ranks, null ones are another rank's replicas: for merges whose collective reads only
// this rank's, and checks those), and w and w_p (global->size(), previous_size()) both have
// replicas.size parameters.
void CheckReplicasAndGlobal(const ReplicaSet& replicas, const GlobalModel* global, bool other_ranks = false);

// For merges that work on host memory only: throws std::invalid_argument when the replicas are on
// GPUs, std::logic_error when the global model is newer on the GPUs than on the host.
void CheckOnHost(const ReplicaSet& replicas, const GlobalModel* global, const std::string& merge);

// For the merge and collective that read and write fp32 replicas in place (the copy, the rank
// sum): throws std::invalid_argument naming `who` when the replicas keep their weights in bf16,
// which the other host merges read through merge/replica_blocks.h.
void CheckFp32Replicas(const ReplicaSet& replicas, const std::string& who);

// Throws std::invalid_argument unless each of the input's vectors is empty or has one entry per
// replica (a merge that needs a vector checks that it is not empty). `merge` names the merge in
// the message.
void CheckOptionalInput(const MergeInput& input, size_t replicas, const std::string& merge);

}  // namespace xmlt::merge
