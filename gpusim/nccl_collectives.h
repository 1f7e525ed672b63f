// The simulator's NCCL collectives (all-reduce, reduce-scatter, all-gather): one rank's call, as
// the groups hold it and the ring's cost model reads it; the calls themselves are in
// nccl_collectives.cc.
#pragma once

#include <nccl.h>

#include <cstddef>
#include <memory>
#include <vector>

#include "gpusim/nccl_communicators.h"

namespace gpusim::nccl {

enum class Kind { kAllReduce, kReduceScatter, kAllGather };

// The NCCL call's name, for messages.
const char* KindName(Kind kind);

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

// Places a group's calls in their collectives and enqueues them.
ncclResult_t Submit(const std::vector<Call>& calls);

}  // namespace gpusim::nccl
