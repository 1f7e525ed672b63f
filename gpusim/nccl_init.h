// One rank's ncclCommInitRank, as an open group holds it (nccl_open_group.h) until ncclGroupEnd;
// apart from nccl_communicators.h, whose source includes the open group.
#pragma once

#include <nccl.h>

namespace gpusim::nccl {

// An ncclCommInitRank inside a group: the rank joins its clique at ncclGroupEnd.
struct Init {
  ncclComm_t* comm;
  int nranks;
  ncclUniqueId id;
  int rank;
  int device;
};

}  // namespace gpusim::nccl
