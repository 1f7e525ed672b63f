// NCCL's groups: at the outermost ncclGroupEnd a host thread's held inits join their cliques, then
// its collective calls take their places (nccl_collectives.cc). A refused call drops its whole
// group, as in NCCL.
#include <utility>

#include "gpusim/nccl_collectives.h"
#include "gpusim/nccl_communicators.h"
#include "gpusim/nccl_open_group.h"

using namespace gpusim::nccl;

namespace gpusim::nccl {

Group& ThisThreadsGroup() {
  static thread_local Group group;
  return group;
}

}  // namespace gpusim::nccl

ncclResult_t ncclGroupStart() {
  ++ThisThreadsGroup().depth;
  return ncclSuccess;
}

ncclResult_t ncclGroupEnd() {
  Group& group = ThisThreadsGroup();
  if (group.depth == 0) return Refuse(ncclInvalidUsage, "ncclGroupEnd without ncclGroupStart");
  if (--group.depth > 0) return ncclSuccess;
  const std::vector<Init> inits = std::move(group.inits);
  const std::vector<Call> calls = std::move(group.calls);
  const ncclResult_t error = group.error;
  group.inits.clear();
  group.calls.clear();
  group.error = ncclSuccess;
  if (error != ncclSuccess) return error;  // a refused call drops its whole group, as in NCCL
  if (!inits.empty())
    if (const ncclResult_t result = InitRanks(inits); result != ncclSuccess) return result;
  return Submit(calls);
}
