// The devices of a multi-device run and how batches reach them: one manager thread per device,
// the row sampler, dynamic / static / synchronous dispatch on the virtual or the wall clock, the
// emulated heterogeneity, and device faults (a failed device is dropped, its rows of the
// mega-batch go back to the queue and are trained first in the next one).
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "data/dataset.h"
#include "dist/rank_group.h"
#include "engine/device.h"
#include "engine/heterogeneity.h"
#include "engine/worker.h"
#include "kernels/model.h"
#include "scheduler/batch_size_scaling.h"
#include "scheduler/checkpoint_file.h"
#include "scheduler/dispatch_planner.h"
#include "scheduler/epoch_sampler.h"
#include "scheduler/run_control.h"
#include "scheduler/loss_watch.h"
#include "scheduler/train_options.h"

namespace xmlt::scheduler {

// What the devices did in one mega-batch (or one synchronous round).
struct MegaBatchRun {
  std::vector<uint64_t> updates;  // u_i
  std::vector<uint64_t> rows_of;  // rows per device
  std::vector<double> busy_s;     // per device
  double span_s = 0;              // the mega-batch's duration (the slowest device)
  std::vector<double> loss_of;    // per device: sum of its batches' mean losses, in its order
  uint64_t batches = 0, rows = 0; // what the surviving devices trained
  std::string diverged_on;        // a device whose loss diverged (empty: none)
  std::string divergence;         // how: "non-finite loss" or the explosion's numbers
};

class DevicePool {
 public:
  DevicePool(const data::Dataset& train, const TrainOptions& options, const EngineOptions& engine,
             const kernels::Model<float>& initial, std::vector<FaultInjection> faults);

  size_t size() const { return workers_.size(); }
  // Whether this process trains device i (across ranks, each device has one owning rank).
  bool local(size_t i) const { return engine_.ranks == nullptr || device_rank_[i] == engine_.ranks->rank(); }
  std::vector<size_t> alive() const;  // devices not dropped, ascending
  bool dropped(size_t i) const { return !fault_[i].empty(); }
  const std::string& fault(size_t i) const { return fault_[i]; }
  engine::Device& device(size_t i) { return workers_[i]->device(); }  // only between mega-batches
  std::vector<BatchSizeAndLr>& states() { return states_; }
  const BatchScalingBounds& bounds() const { return bounds_; }
  uint64_t rows_per_epoch() const { return sampler_.rows_per_epoch(); }
  // The rows one mega-batch can hold: M batches, rounded up to a multiple of the devices under
  // static dispatch (at most n - 1 more), run on to its epoch's end rather than leave less than
  // half of one there (M / 2 more), and its last batch whole (one more).
  static uint64_t ArenaRows(uint32_t mega_batch, uint32_t batch, size_t devices) {
    return (uint64_t(mega_batch) + mega_batch / 2 + devices + 1) * batch;
  }
  uint64_t MegaBatchRows() const;  // rows in a full mega-batch
  MegaBatchRun EmptyRun() const;

  // Starts mega-batch `index` (1-based; a rolled-back one is started again): injected faults due
  // by then fire, at most one per device per start.
  void BeginMegaBatch(uint64_t index);
  // Trains at least `budget` rows of a mega-batch in whole batches (dynamic or static dispatch;
  // the last batch may pass the budget, never `cap`, the rows the run has left) into `run`, which
  // holds the mega-batch so far: counts are added batch by batch in plan order, times cover the
  // whole mega-batch. `continues`: the rows are the rest of the mega-batch whose first rows an earlier
  // call trained (a stop or the run's end cut it, and a resumed run goes on with it); the plan goes
  // on where it stopped, and the sums come out as if the mega-batch had been trained in one call.
  // Batches are dealt one at a time as their device has room (a few queued each), so a raised
  // `stop` ends the call after the batches already dealt, each device's next batch at the latest.
  struct Dealt {
    uint64_t rows = 0;     // rows of the budget dealt out
    bool stopped = false;  // `stop` ended it with budget left
  };
  Dealt RunMegaBatch(uint64_t budget, uint64_t cap, bool continues, MegaBatchRun* run,
                     const std::atomic<int>* stop = nullptr);
  // Rows until the sampler's epoch ends (rows of failed batches, trained first, included): where a
  // mega-batch ends at the latest.
  uint64_t RowsToEpochEnd() const;
  // Synchronous round: --batch rows (fewer at an epoch's end or at `cap`, the rows the run has
  // left) split evenly over the surviving devices.
  MegaBatchRun RunSyncRound(uint64_t cap);

  // Across ranks, before a merge that reads every replica: every alive device's replica from its
  // owner into the other ranks' mirrors. Nothing in one process.
  void ShareReplicas();
  // Across ranks, before `root` writes a checkpoint: every alive device's replica and local
  // momentum from its owner into root's mirror; the other ranks make no mirror. Nothing in one process.
  void GatherReplicas(int root);
  // Frees the mirrors of the other ranks' replicas (until a merge or checkpoint asks again).
  void ReleaseMirrors();

  // Called on the coordinator's thread with each batch's result as it comes back (progress; a
  // stop raised from it is seen before the next batch is dealt).
  void OnBatch(std::function<void(const engine::BatchResult&)> hook) { on_batch_ = std::move(hook); }

  // Scores `model` on `rows` of `test` with every surviving device at once, each on its own
  // contiguous share, summed in device order (call between mega-batches).
  engine::Evaluation Evaluate(const kernels::Model<float>& model, const data::Dataset& test,
                              const std::vector<uint64_t>& rows);

  // Checkpoints: scalar state as JSON, arrays as sections (read from the devices' host params, so
  // call between mega-batches, after a merge). Restore throws data::InputError naming the file.
  nlohmann::json SaveMeta() const;
  void AddSections(CheckpointWriter* writer, std::vector<std::vector<float>>* momentum_storage);
  // Devices dropped before the checkpoint are revived from `global`.
  void Restore(const CheckpointReader& reader, const nlohmann::json& meta, const std::vector<float>& global);
  // An elastic restart: a checkpoint of other devices. The data's state (the epoch's order and
  // position, returned rows, the row cost, the loss reference) goes on; every device starts from
  // `global` with no momentum and the initial batch size and learning rate, the dispatch plan
  // afresh, and injected faults of the old devices are dropped.
  void RestoreReplanned(const CheckpointReader& reader, const nlohmann::json& meta, const std::vector<float>& global);

  // Divergence: the scheduler's state at a good point, and the way back to it with every
  // surviving replica reset to `model`, its momentum zeroed and its learning rate halved.
  struct Snapshot {
    EpochSampler sampler;
    std::vector<BatchSizeAndLr> states;
    std::vector<uint64_t> requeued;
    double row_cost_s;
    DispatchPlanner planner;
  };
  Snapshot TakeSnapshot() const;
  void RollBack(const Snapshot& snapshot, const std::vector<float>& model);
  // Every device's learning rate from `lr` for b_max rows, linearly scaled to its batch (a resume
  // with a lower --lr: earlier rollback halvings are dropped).
  void ResetLearningRates(double lr);

 private:
  struct Assignment {
    size_t device = 0;
    size_t offset = 0, count = 0;
    double slowdown = 1;
  };
  void RestoreDataState(const CheckpointReader& reader, const nlohmann::json& meta);
  std::vector<engine::Device*> DevicesAt(const std::vector<size_t>& ids);
  size_t TakeRows(size_t want, uint64_t* out);
  Assignment Assign(size_t device, size_t want, size_t* used, uint64_t* cap);
  engine::BatchTask TaskFor(const Assignment& a, uint64_t id);
  void RunPlan(const std::vector<Assignment>& plan, MegaBatchRun* run);
  void Conclude(const std::vector<Assignment>& plan, const std::vector<engine::BatchResult>& results,
                std::chrono::steady_clock::time_point start, MegaBatchRun* run);
  Dealt RunPlanned(uint64_t budget, uint64_t cap, MegaBatchRun* run, const std::atomic<int>* stop);
  void TimeOnTheVirtualClock(const std::vector<Assignment>& plan, const std::vector<engine::BatchResult>& results,
                             uint64_t rows_before, MegaBatchRun* run);
  // Calls deal(device, task id) to submit the next batch to `device`; false when none is left.
  std::vector<engine::BatchResult> DealAsDevicesReturn(const std::vector<size_t>& devices,
                                                       const std::function<bool(size_t, uint64_t)>& deal);
  Dealt RunDynamicWall(uint64_t budget, uint64_t cap, MegaBatchRun* run, const std::atomic<int>* stop);
  Dealt RunDynamicWallAcrossRanks(uint64_t budget, uint64_t cap, MegaBatchRun* run);
  std::vector<uint64_t> RankShares(uint64_t rows) const;
  void Settle(const std::vector<Assignment>& plan, const std::vector<engine::BatchResult>& results, MegaBatchRun* run);
  void DropContextSharers(size_t failed);
  void ShareResults(const std::vector<Assignment>& plan, std::vector<engine::BatchResult>* results);

  const TrainOptions& options_;
  LossWatch loss_watch_;  // batch losses in plan order: the same on every run of a seed
  const EngineOptions& engine_;
  EpochSampler sampler_;
  DispatchPlanner planner_;
  BatchScalingBounds bounds_;
  engine::ResultQueue results_;
  std::vector<std::unique_ptr<engine::Worker>> workers_;
  std::vector<int> device_rank_;  // the rank that owns each device (all 0 in one process)
  std::vector<BatchSizeAndLr> states_;
  std::vector<std::string> fault_;       // empty while the device is healthy
  std::vector<FaultInjection> pending_;  // injections not yet fired
  uint64_t index_ = 0;                   // the mega-batch being trained
  std::vector<bool> injected_;           // per device: an injection fired in this start
  std::vector<uint64_t> requeued_;       // rows of failed batches, trained before new ones
  std::vector<uint64_t> arena_;          // the rows of the current mega-batch, allocated once
  double row_cost_s_ = 0;
  // Wall clock across ranks: each device's rows per second in the last mega-batch it trained in
  // (0: not measured yet), which shares the next mega-batch out between the ranks.
  std::vector<double> rows_per_s_;
  std::function<void(const engine::BatchResult&)> on_batch_;
};

}  // namespace xmlt::scheduler
