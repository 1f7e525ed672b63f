// The simulator's NCCL collectives (all-reduce, reduce-scatter, all-gather), as ncclGroupEnd
// (nccl_groups.cc) submits a group's calls (nccl_call.h); the calls themselves are in nccl_collectives.cc.
#pragma once

#include <nccl.h>

#include <vector>

#include "gpusim/nccl_call.h"

namespace gpusim::nccl {

// The NCCL call's name, for messages.
const char* KindName(Kind kind);

// Places a group's calls in their collectives and enqueues them.
ncclResult_t Submit(const std::vector<Call>& calls);

}  // namespace gpusim::nccl
