// Which device trains the next batch of a mega-batch, with which slowdown: the dispatch plan,
// without threads or data (a Dealer, dealer.h, takes the rows and runs the batches), so that tests can
// drive it batch by batch.
//   dynamic (virtual clock): the surviving device whose simulated clock is earliest, ties to the
//     lower index; its clock moves on by rows x slowdown. On the wall clock the device that reports
//     back first is the next, and the pool asks for no choice.
//   static (elastic SGD): round robin, ceil(M / n) batches each, whatever the speeds.
//   sync: each round's rows split evenly (SplitRound).
// Slowdowns are drawn in the plan's order, so the plan depends only on the seed. Its state (the
// clocks, the work done, the position, the slowdown generators) goes into checkpoints, so that a
// mega-batch cut by a stop or the run's end is planned on as if it had never been cut.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <utility>
#include <vector>

#include "engine/heterogeneity.h"
#include "scheduler/train_options.h"

namespace xmlt::scheduler {

class DispatchPlanner {
 public:
  DispatchPlanner(SchedulerOptions::Schedule schedule, uint32_t mega_batch, engine::SlowdownModel slowdown);

  size_t devices() const { return clock_.size(); }

  // Clocks, work and position back to zero.
  void BeginMegaBatch();

  // The device the plan gives the next batch, among `alive` (ascending, not empty); nullopt once a
  // static plan has dealt every batch of the mega-batch.
  std::optional<size_t> NextDevice(const std::vector<size_t>& alive) const;

  // The slowdown of `device`'s next batch (drawn now, in the plan's order).
  double DrawSlowdown(size_t device) { return slowdown_.NextFactor(device); }

  // A batch of `rows` with `slowdown` went to `device`: its clock (dynamic) or the position
  // (static) moves on.
  void Dealt(size_t device, uint64_t rows, double slowdown);

  // The work (rows x slowdown) a device did in the mega-batch so far, for its busy time; a dropped
  // device's batches are not added. A sync round is timed on its own (ClearWork).
  void AddWork(size_t device, uint64_t rows, double slowdown) { work_[device] += double(rows) * slowdown; }
  double Work(size_t device) const { return work_[device]; }
  void ClearWork() { work_.assign(work_.size(), 0.0); }

  // A sync round: `rows` split evenly over `alive`, the first ones a row more; (device, rows) for
  // each that gets any.
  static std::vector<std::pair<size_t, uint64_t>> SplitRound(uint64_t rows, const std::vector<size_t>& alive);

  // Checkpoint state; Restore throws std::invalid_argument (or nlohmann's exceptions) for state of
  // another shape. Keys absent from older checkpoints read as zero.
  void Save(nlohmann::json* meta) const;
  void Restore(const nlohmann::json& meta);

 private:
  SchedulerOptions::Schedule schedule_;
  uint32_t mega_batch_;
  engine::SlowdownModel slowdown_;
  std::vector<double> clock_, work_;
  uint64_t position_ = 0;
};

}  // namespace xmlt::scheduler
