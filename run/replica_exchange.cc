// Where the replicas of other ranks' devices live; see replica_exchange.h.
#include "run/replica_exchange.h"

#include "scheduler/rank_exchange.h"

namespace xmlt::run {

void ShareReplicas(scheduler::DevicePool& pool) {
  if (pool.ranks() == nullptr) return;
  const std::vector<size_t> ids = pool.alive();
  scheduler::SendReplicasToEveryRank(*pool.ranks(), pool.owners(), ids, pool.DevicesAt(ids));
}

void GatherReplicas(scheduler::DevicePool& pool, int root) {
  if (pool.ranks() == nullptr) return;
  const std::vector<size_t> ids = pool.alive();
  scheduler::SendReplicasToRoot(*pool.ranks(), root, pool.owners(), ids, pool.DevicesAt(ids));
}

void ReleaseMirrors(scheduler::DevicePool& pool) {
  for (size_t i = 0; i < pool.size(); ++i)
    if (!pool.local(i)) pool.device(i).ReleaseMirror();
}

}  // namespace xmlt::run
