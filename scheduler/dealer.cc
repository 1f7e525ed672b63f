// The choice of a dealer, and the step the wall-clock dealers share; see dealer.h.
#include "scheduler/dealer.h"

namespace xmlt::scheduler {

std::unique_ptr<Dealer> MakeDealer(DevicePool& pool) {
  const SchedulerOptions& scheduling = pool.scheduling();
  if (scheduling.schedule == SchedulerOptions::Schedule::kSync) return MakeSyncRoundDealer(pool);
  if (scheduling.schedule == SchedulerOptions::Schedule::kDynamic && scheduling.clock == SchedulerOptions::Clock::kWall)
    return pool.ranks() != nullptr ? MakeRankShareDealer(pool) : MakeWallClockDealer(pool);
  return MakePlannedDealer(pool);
}

std::vector<engine::BatchResult> DealAsDevicesReturn(DevicePool& pool, const std::vector<size_t>& devices,
                                                     const std::function<bool(size_t, uint64_t)>& deal) {
  constexpr int kQueued = 2;
  std::vector<engine::BatchResult> results;
  size_t outstanding = 0;
  auto next = [&](size_t i) {
    if (!deal(i, results.size())) return;
    results.emplace_back();
    ++outstanding;
  };
  for (int round = 0; round < kQueued; ++round)
    for (size_t i : devices) next(i);
  while (outstanding > 0) {
    const engine::BatchResult result = pool.Collect();
    --outstanding;
    results[result.id] = result;
    if (!result.error) next(result.device);
  }
  return results;
}

}  // namespace xmlt::scheduler
