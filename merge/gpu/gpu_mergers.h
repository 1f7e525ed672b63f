// Merges of replicas that live in GPU memory, run on the GPUs (the device code beside this file): the replicas never
// go through the host, and the global model w and its previous value w_p stay on the GPUs
// (GlobalModel::KeptOnGpus) until an evaluation, a checkpoint or the rollback target asks for them.
// Built only with the CUDA backend. Each takes a ReplicaSet whose members are all on GPUs; the
// replicas' pointers must stay the same from merge to merge (a new alive set means a new merger).
#pragma once

#include <memory>
#include <string>

#include "merge/collective.h"
#include "merge/gpu/nccl_all_reduce.h"
#include "merge/merger.h"
#include "merge/replica_set.h"

namespace xmlt::merge::gpu {

// The device collectives: our multi-stream ring (merge/gpu/ring_all_reduce.h) or NCCL
// (merge/gpu/nccl_all_reduce.h). Weighted merges (normalized, average, gradient) run on them
// through the usual skeleton; the global momentum is applied on the GPUs by each shard's owner.
// Throws std::invalid_argument when the replicas are not on GPUs.
enum class GpuCollectiveKind { kRing, kNccl };
std::shared_ptr<Collective> MakeGpuCollective(GpuCollectiveKind kind, const ReplicaSet& replicas);

// NCCL over every rank's GPUs (the hierarchical merge across ranks): `replicas` lists every
// rank's replicas, the other ranks' with null pointers and their GPU ordinals; `ranks` says who
// owns each and carries rank 0's NCCL id. Every rank makes it, and every call on it, together.
std::shared_ptr<Collective> MakeGpuCollectiveAcrossRanks(const ReplicaSet& replicas, NcclRanks ranks);

// The elastic force merge (EASGD, CROSSBOW) on the GPUs (merge/gpu/elastic_force.h); the same
// rule and checks as MakeElasticForceMerger.
std::unique_ptr<Merger> MakeGpuElasticForceMerger(const MergeOptions& options, const ReplicaSet& replicas);

// Adasum on the GPUs (merge/gpu/device_adasum.h): the host merge's tree, per tensor
// (replicas.tensors), its dot products in double, for any number of replicas.
std::unique_ptr<Merger> MakeGpuAdasumMerger(const MergeOptions& options, const ReplicaSet& replicas);

}  // namespace xmlt::merge::gpu
