// Merge schedules that the merge projection (merge_projection.cc) compares with ours, written
// there only: a pipelined binary tree and NCCL's pipelined ring. Each returns its projected time
// in seconds and leaves the sum in every replica.
#pragma once

#include <cstddef>

#include "benchmarks/merge_projection_replicas.h"

namespace merge_projection {

// NCCL's ring, pipelined: channel p's ring starts at GPU p mod N; step s (1 .. 2N-2) at ring
// position k of slice j receives from position k - 1 once that has done step s - 1 of slice j.
// Issued wave by wave (j + s), so that each stream's order lets slice j + 1 follow slice j.
double NcclStyleRing(Replicas& r, size_t channels, size_t slice_floats);

// A binary tree in heap order (the children of i are 2i + 1 and 2i + 2), pipelined in chunks.
// Each node copies its children's chunk c on one stream, one child after the other, into two
// slots per child, and adds them on another: its incoming port takes the chunks in chunk order
// (timing.h gives a port to copies in the order the simulator runs them, stream by stream, not
// by fair share), and runs at most two chunks ahead of its parent. It sends the sum's chunks to
// each child on a stream per child, so that a child whose port is still busy with its own subtree
// does not hold up the other.
double Tree(Replicas& r, size_t chunks);

}  // namespace merge_projection
