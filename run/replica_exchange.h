// Where the replicas of other ranks' devices live: a rank holds a mirror of such a replica only
// while a merge or a checkpoint needs it (scheduler/rank_exchange.h moves the bytes). In one
// process every call here does nothing.
#pragma once

#include "scheduler/device_pool.h"

namespace xmlt::run {

// Before a merge that reads every replica: every alive device's replica from its owner into the
// other ranks' mirrors.
void ShareReplicas(scheduler::DevicePool& pool);
// Before `root` writes a checkpoint: every alive device's replica and local momentum from its
// owner into root's mirror; the other ranks make no mirror.
void GatherReplicas(scheduler::DevicePool& pool, int root);
// Frees the mirrors of the other ranks' replicas (until a merge or checkpoint asks again).
void ReleaseMirrors(scheduler::DevicePool& pool);

}  // namespace xmlt::run
