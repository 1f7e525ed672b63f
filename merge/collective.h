// Collectives the merges run on: a weighted sum over the replicas, written back into every replica.
// The CPU ones cut the model into partitions reduced in parallel, so that no single thread gathers
// everything. The CUDA backend adds GPU implementations behind the same interface.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "merge/global_model.h"
#include "merge/replica_set.h"

namespace xmlt::merge {

// Turns the weighted sums of parameters [begin, end) into their new global values, in place,
// e.g. applying the global momentum rule. Called once per block, concurrently for disjoint blocks.
using FinishBlock = std::function<void(size_t begin, size_t end, float* values)>;

class Collective {
 public:
  virtual ~Collective() = default;

  // Sum of squares of each replica's parameters, accumulated in double.
  virtual std::vector<double> SquaredNorms(const ReplicaSet& replicas) = 0;

  // For every parameter j: v = sum_i weights[i] * replica_i[j] (weights need not sum to 1), then
  // finish(block containing j) rewrites v, then v is written into every replica. Needs no buffer
  // of the model's size: blocks are small and live on each thread's stack.
  virtual void WeightedAllReduce(const ReplicaSet& replicas, const std::vector<double>& weights,
                                 const FinishBlock& finish) = 0;

  // The weighted sum finished by the global momentum rule (merge/global_momentum.h) on `global`.
  // The CPU collectives run it as WeightedAllReduce's finish step on the host vectors; the GPU
  // collectives (merge/gpu/) on the GPUs, where they keep w and w_p.
  virtual void WeightedAllReduceWithMomentum(const ReplicaSet& replicas, const std::vector<double>& weights,
                                             double momentum, MomentumMode mode, GlobalModel* global);
};

// The CPU partitioned sum: `partitions` (default: the replica count) parallel partitions of the
// model, each also split into blocks run in parallel; within a block the replicas are summed one
// after another, partition p starting at replica p mod n so that the partitions begin by reading
// different replicas. Boundaries and summation orders are fixed, so results are the same bits
// whatever the thread count. Throws std::invalid_argument on a weight count other than the
// replica count, on no replicas (WeightedAllReduce) and on null parameters.
// Deliberately not a ring all-reduce (reduce-scatter then all-gather): a ring balances traffic
// over point-to-point links, but here every replica is in one memory, where reading and writing
// each once per cache-sized block is the least traffic; a ring's 2(n-1) dependent passes over
// chunks would move about twice the bytes.
std::unique_ptr<Collective> MakeCpuPartitionedSumCollective(size_t partitions = 0);
// The CPU tree: partitions in parallel as in the partitioned sum, but within a block the replicas
// are summed pairwise in a binary tree over adjacent devices (a different rounding order, log n
// depth).
std::unique_ptr<Collective> MakeCpuTreeCollective(size_t partitions = 0);
// The naive reference: one thread, replica after replica. For tests and as a baseline.
std::unique_ptr<Collective> MakeNaiveCollective();
// The collectives a run can choose (--collective). With every device a GPU, "ring" runs the ring
// all-reduce on the GPUs and "nccl" NCCL's (merge/gpu/); nccl has no host form.
enum class CollectiveKind { kPartitionedSum, kTree, kNaive, kNccl };
// "ring" (the partitioned sum, under the name the CLI has always used), "tree", "naive" or "nccl";
// throws std::invalid_argument otherwise. CollectiveName is the inverse.
CollectiveKind ParseCollectiveKind(const std::string& name);
const char* CollectiveName(CollectiveKind kind);
// The host collective of that kind; throws std::invalid_argument for kNccl.
std::unique_ptr<Collective> MakeCollective(CollectiveKind kind, size_t devices);
std::unique_ptr<Collective> MakeCollective(const std::string& name, size_t devices);

}  // namespace xmlt::merge
