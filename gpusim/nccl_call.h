// One rank's collective call, as an open group holds it (nccl_open_group.h) and the ring's cost
// model reads it (nccl_ring_cost.h); apart from nccl_collectives.h, whose source includes both.
#pragma once

#include <nccl.h>

#include <cstddef>
#include <memory>

struct CUstream_st;

namespace gpusim::nccl {

struct PreMulSum;

enum class Kind { kAllReduce, kReduceScatter, kAllGather };

// One rank's call. `count` is the call's own count argument (recvcount, sendcount).
struct Call {
  Kind kind = Kind::kAllReduce;
  ncclComm* comm = nullptr;  // null in a collective's slot until that rank has called
  const void* send = nullptr;
  void* recv = nullptr;
  size_t count = 0;
  ncclDataType_t datatype = ncclFloat32;
  ncclRedOp_t op = ncclSum;
  CUstream_st* stream = nullptr;
  // The pre-multiplied sum `op` names, held by the call: NCCL lets the op be destroyed as soon as
  // the calls given it have returned.
  std::shared_ptr<const PreMulSum> premul;
};

}  // namespace gpusim::nccl
