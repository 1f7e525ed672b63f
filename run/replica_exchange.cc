// Where the replicas of other ranks' devices live; see replica_exchange.h.
#include "run/replica_exchange.h"

#include "scheduler/rank_exchange.h"

namespace xmlt::scheduler {

void ShareReplicas(DevicePool& pool) {
  if (pool.engine().ranks == nullptr) return;
  const std::vector<size_t> ids = pool.alive();
  ShareReplicas(*pool.engine().ranks, pool.owners(), ids, pool.DevicesAt(ids));
}

void GatherReplicas(DevicePool& pool, int root) {
  if (pool.engine().ranks == nullptr) return;
  const std::vector<size_t> ids = pool.alive();
  GatherReplicas(*pool.engine().ranks, root, pool.owners(), ids, pool.DevicesAt(ids));
}

void ReleaseMirrors(DevicePool& pool) {
  for (size_t i = 0; i < pool.size(); ++i)
    if (!pool.local(i)) pool.device(i).ReleaseMirror();
}

}  // namespace xmlt::scheduler
