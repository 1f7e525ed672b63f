// What a host thread's open NCCL group holds: the inits and collective calls made inside it, which
// ncclGroupEnd (nccl_groups.cc) hands back to the units that made them; hence a file of its own.
#pragma once

#include <nccl.h>

#include <vector>

#include "gpusim/nccl_call.h"
#include "gpusim/nccl_init.h"

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
