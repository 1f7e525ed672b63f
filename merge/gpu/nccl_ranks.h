// Who takes part in an NCCL merge across processes (NcclAllReduce, nccl_all_reduce.h), apart from
// the merge's state (nccl_merge_state.h), which reads it too.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <vector>

namespace xmlt::merge::gpu {

// The processes of a merge across processes: this one's rank, the process that holds each replica
// (the others' replicas are never read here; their pointers may be null), and how rank 0's
// `size` bytes reach every process (called by every process with its own buffer, which rank 0's
// bytes overwrite).
struct NcclRanks {
  int rank = 0;
  std::vector<int> owners;
  std::function<void(uint8_t* bytes, size_t size)> from_rank0;
};

}  // namespace xmlt::merge::gpu
