// The devices of a multi-device run and what dealing batches to them needs: one manager thread per
// device, the rank that owns each, their batch sizes and learning rates, their faults (a failed
// device is dropped), the rows (row_queue.h), the dispatch plan and its clocks, and injected faults.
// How the batches of a mega-batch are dealt is a Dealer's (dealer.h); how their results count and
// how long they took, result_tally.h's.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "data/dataset.h"
#include "engine/device.h"
#include "engine/worker.h"
#include "kernels/model.h"
#include "ranks/rank_group.h"
#include "scheduler/batch_size_scaling.h"
#include "scheduler/dispatch_planner.h"
#include "scheduler/fault_injections.h"
#include "scheduler/loss_watch.h"
#include "scheduler/row_queue.h"
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

// One batch of a plan: `count` rows at `offset` in the row arena, for `device`. A batch cut short
// at an epoch's or the run's end steps at `rate_share` of the device's rate: its rows over the
// rows asked for, as Algorithm 1 scales a smaller batch's rate.
struct Assignment {
  size_t device = 0;
  size_t offset = 0, count = 0;
  double slowdown = 1;
  double rate_share = 1;
};

class DevicePool {
 public:
  // Across ranks `ranks` is the group in which every rank runs this pool's plan (RankCount(scheduling)
  // ranks, this process one of them); null: one process owns every device.
  DevicePool(const data::Dataset& train, const TrainOptions& options, const SchedulerOptions& scheduling,
             const kernels::Model<float>& initial, std::vector<FaultInjection> faults,
             ranks::RankGroup* ranks = nullptr);

  const TrainOptions& options() const { return options_; }
  const SchedulerOptions& scheduling() const { return scheduling_; }
  ranks::RankGroup* ranks() const { return ranks_; }  // null in one process
  size_t size() const { return workers_.size(); }
  // Whether this process trains device i (across ranks, each device has one owning rank).
  bool local(size_t i) const { return ranks_ == nullptr || device_rank_[i] == ranks_->rank(); }
  int owner(size_t i) const { return device_rank_[i]; }
  const std::vector<int>& owners() const { return device_rank_; }
  std::vector<size_t> alive() const;  // devices not dropped, ascending
  bool dropped(size_t i) const { return !fault_[i].empty(); }
  const std::string& fault(size_t i) const { return fault_[i]; }
  // Drops device i with `why` (never empty: an empty fault would read as a healthy device).
  void Drop(size_t i, std::string why) { fault_[i] = std::move(why); }
  engine::Device& device(size_t i) { return workers_[i]->device(); }  // only between mega-batches
  const engine::Device& device(size_t i) const { return workers_[i]->device(); }
  engine::Worker& worker(size_t i) { return *workers_[i]; }
  std::vector<engine::Device*> DevicesAt(const std::vector<size_t>& ids);
  std::vector<BatchSizeAndLr>& states() { return states_; }
  const std::vector<BatchSizeAndLr>& states() const { return states_; }
  const BatchScalingBounds& bounds() const { return bounds_; }

  RowQueue& rows() { return rows_; }
  const RowQueue& rows() const { return rows_; }
  DispatchPlanner& planner() { return planner_; }
  const DispatchPlanner& planner() const { return planner_; }
  FaultInjections& faults() { return faults_; }
  const FaultInjections& faults() const { return faults_; }
  LossWatch& loss_watch() { return loss_watch_; }
  const LossWatch& loss_watch() const { return loss_watch_; }
  // The virtual clock's seconds per row (0 until calibrated).
  double& row_cost_s() { return row_cost_s_; }
  double row_cost_s() const { return row_cost_s_; }

  uint64_t rows_per_epoch() const { return rows_.rows_per_epoch(); }
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
  void BeginMegaBatch(uint64_t index) { faults_.BeginMegaBatch(index); }

  // The steps every way of dealing shares.
  // A batch of `want` rows for `device`, fewer at the end of an epoch (the sampler's) or at `*cap`,
  // the rows the run has left, taken into the arena at `*used`; a mega-batch's rows never cut one.
  Assignment Assign(size_t device, size_t want, size_t* used, uint64_t* cap);
  // The task of batch `id` (its rows, learning rate, slowdown and any fault due on it). Every rank
  // makes every task, so that an injected fault is used up the same everywhere.
  engine::BatchTask TaskFor(const Assignment& a, uint64_t id);
  // The learning-rate schedule's factor on every device's rate in the tasks made from now on (the
  // loop sets it at each mega-batch's start; lr_schedule.h).
  void SetLrScale(double scale) { lr_scale_ = scale; }
  double lr_scale() const { return lr_scale_; }
  void Submit(size_t device, engine::BatchTask task) { workers_[device]->Submit(std::move(task)); }
  // The next result back from any device, reported to the OnBatch hook.
  engine::BatchResult Collect();
  // Across ranks: every rank learns the results of the batches the others' devices trained.
  void ShareResults(const std::vector<Assignment>& plan, std::vector<engine::BatchResult>* results);

  // Called on the coordinator's thread with each batch's result as it comes back (progress; a
  // stop raised from it is seen before the next batch is dealt).
  void OnBatch(std::function<void(const engine::BatchResult&)> hook) { on_batch_ = std::move(hook); }

 private:
  const TrainOptions& options_;
  LossWatch loss_watch_;  // batch losses in plan order: the same on every run of a seed
  const SchedulerOptions& scheduling_;
  ranks::RankGroup* ranks_;
  RowQueue rows_;
  DispatchPlanner planner_;
  FaultInjections faults_;
  double lr_scale_ = 1;
  // 1 / (1 - local momentum) on a sampled CPU device, which steps without momentum; 1 elsewhere.
  std::vector<double> step_scale_;
  BatchScalingBounds bounds_;
  engine::ResultQueue results_;
  std::vector<std::unique_ptr<engine::Worker>> workers_;
  std::vector<int> device_rank_;  // the rank that owns each device (all 0 in one process)
  std::vector<BatchSizeAndLr> states_;
  std::vector<std::string> fault_;  // empty while the device is healthy
  double row_cost_s_ = 0;
  std::function<void(const engine::BatchResult&)> on_batch_;
};

}  // namespace xmlt::scheduler
