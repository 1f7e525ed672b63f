// The ways of dealing a mega-batch's batches to the devices, behind one interface; the training
// loop picks one at its start (MakeDealer):
//   planned (planned_dealer.cc): the dispatch plan names each batch's device (dynamic on the
//     virtual clock, static on either clock);
//   wall clock (wall_clock_dealer.cc): dynamic, each batch to whichever device reports back first;
//   rank shares (rank_share_dealer.cc): dynamic on the wall clock across ranks, each rank dealing
//     its share of the rows to its own devices;
//   sync rounds (sync_round_dealer.cc): each round split evenly, merged after every round.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>

#include "scheduler/device_pool.h"

namespace xmlt::scheduler {

struct DealRequest {
  uint64_t budget = 0;  // rows of the mega-batch to deal: at least these, in whole batches
  uint64_t cap = 0;     // the rows the run has left: never more (a batch is cut at it)
  // The rows are the rest of a mega-batch whose first rows an earlier call dealt (a stop or the
  // run's end cut it, and a resumed run goes on with it): the plan goes on where it stopped.
  bool continues = false;
  // Raised: the call ends after the batches already dealt, each device's next batch at the latest.
  // Null across ranks, where a stop is agreed between mega-batches.
  const std::atomic<int>* stop = nullptr;
  // For a dealer that merges after every round: merges the replicas after `round`.
  std::function<void(const MegaBatchRun& round)> merge_round;
};

struct Dealt {
  uint64_t rows = 0;     // rows of the budget dealt out
  bool stopped = false;  // the stop ended it with budget left
};

class Dealer {
 public:
  virtual ~Dealer() = default;
  // Deals `request`'s rows into `run`, which holds the mega-batch so far: counts are added batch by
  // batch in plan order, times cover the whole mega-batch, and the sums come out as if the
  // mega-batch had been dealt in one call.
  virtual Dealt Deal(const DealRequest& request, MegaBatchRun* run) = 0;
  // True when Deal merges after every round itself (request.merge_round); otherwise the loop
  // merges once the mega-batch is whole.
  virtual bool MergesEachRound() const { return false; }
};

// The dealer for the pool's engine options: sync rounds for --schedule sync; on the wall clock,
// dynamic, the wall-clock dealer (rank shares across ranks); the plan otherwise.
std::unique_ptr<Dealer> MakeDealer(DevicePool& pool);

std::unique_ptr<Dealer> MakePlannedDealer(DevicePool& pool);
std::unique_ptr<Dealer> MakeWallClockDealer(DevicePool& pool);
std::unique_ptr<Dealer> MakeRankShareDealer(DevicePool& pool);
std::unique_ptr<Dealer> MakeSyncRoundDealer(DevicePool& pool);

// Deals batches to `devices` as they come back: two each at first (one running, one waiting, so
// that no device idles while the coordinator answers), then one more for each that comes back
// healthy, while deal(device, batch id) submits one; returns every result, by batch id.
std::vector<engine::BatchResult> DealAsDevicesReturn(DevicePool& pool, const std::vector<size_t>& devices,
                                                     const std::function<bool(size_t, uint64_t)>& deal);

}  // namespace xmlt::scheduler
