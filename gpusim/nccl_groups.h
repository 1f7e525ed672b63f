// NCCL's groups on each host thread (ncclGroupStart, ncclGroupEnd): the inits and collective calls
// made inside one are checked at once and held until its end (nccl_groups.cc).
#pragma once

#include <nccl.h>

#include <vector>

#include "gpusim/nccl_collectives.h"
#include "gpusim/nccl_communicators.h"

namespace gpusim::nccl {

// What a host thread's open group holds; depth counts nested ncclGroupStart calls.
struct Group {
  int depth = 0;
  std::vector<Init> inits;
  std::vector<Call> calls;
  ncclResult_t error = ncclSuccess;  // the first refused call's, returned by ncclGroupEnd
};

// The calling host thread's group.
Group& ThisThreadsGroup();

}  // namespace gpusim::nccl
