// The training loop of a multi-device run (RunMultiDevice, multi_device_run.h): the devices, the
// global model, the bookkeeping, and the last good state to roll back to. Run() is the loop; each
// step of it is a method. The loop itself is in training_loop.cc, its checkpoints in
// loop_checkpoint.cc, its counters and evaluations in loop_records.cc.
#pragma once

#include <chrono>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "data/dataset.h"
#include "kernels/model.h"
#include "merge/global_model.h"
#include "merge/merger.h"
#include "run/mega_batch_work.h"
#include "run/rollback.h"
#include "run/run_progress.h"
#include "run/survivor_merge.h"
#include "run/one_device_run.h"
#include "scheduler/dealer.h"
#include "scheduler/device_pool.h"

namespace xmlt::run {

class TrainingLoop {
 public:
  TrainingLoop(const data::Dataset& train, const data::Dataset* test, const scheduler::TrainOptions& options,
               const scheduler::SchedulerOptions& scheduling, kernels::Model<float>* model, const TrainCallbacks& callbacks,
               const RunControl& control, ranks::RankGroup* ranks);

  TrainResult Run();

 private:
  using Clock = std::chrono::steady_clock;

  // training_loop.cc
  MegaBatchWork TrainMegaBatch(uint64_t index);
  void MergeAfterRound(const scheduler::MegaBatchRun& round, MegaBatchWork* trained);
  void MergeInto(MegaBatchWork* trained) { MergeAfterRound(trained->run, trained); }
  // The noise with which the merge about to run rounds bf16 replicas stochastically (the elastic
  // force): from the seed, the mega-batch and the merges already in it, all checkpointed, so a
  // resumed run rounds as the uninterrupted one.
  uint32_t MergeRoundingKey(const MegaBatchWork& trained) const;
  void RollBack(uint64_t index, const scheduler::MegaBatchRun& run);
  // The rollback target needs w on the host: after a merge on the GPUs, one copy back per
  // mega-batch (which is also the copy a lost GPU's share of w falls back to). Without w for a
  // latest state that lends it (rollback.h: TrustedStates).
  SavedState Capture(bool with_w = true) {
    global_.SyncToHost();
    return SavedState{TakeSnapshot(pool_), with_w ? global_.current() : std::vector<float>{}, progress_, open_};
  }
  // Every value of the one replica finite: the copy merge's w will be (RollbackLendsGlobalModel).
  bool ReplicaFinite();
  int StopSignal() const;
  const std::atomic<int>* StopWithinMegaBatch() const;
  [[noreturn]] void StopWithoutDevices();
  // Rows trained so far, the open mega-batch's included.
  uint64_t TrainedRows() const { return progress_.rows_done + (open_.open() ? open_.run.rows : 0); }
  void Event(const std::string& text) const;
  double WallSeconds() const;

  // loop_checkpoint.cc
  void Resume();
  void WriteCheckpoint(const char* why);
  void TryWritePeriodicCheckpoint();
  void TryWriteEndCheckpoint();
  void ReleaseIdleMirrors();

  // loop_records.cc
  void Account(const MegaBatchWork& trained);
  bool EvaluationDue(uint64_t epoch_before) const;
  void Evaluate();
  // Scores w on `rows` of `data` on the devices (lent to the model the scoring reads), reporting
  // devices dropped meanwhile; nothing when no device is left.
  std::optional<engine::Evaluation> ScoreGlobalModel(const data::Dataset& data, const std::vector<uint64_t>& rows);
  // At an epoch's end in the schedule's annealed tail: scores the held-out rows, and ends the run
  // here once they stop gaining (holdout_stop.h).
  void WatchHoldout(uint64_t epoch_before);

  const data::Dataset* test_;
  const scheduler::TrainOptions& options_;
  const scheduler::SchedulerOptions& scheduling_;
  kernels::Model<float>* model_;
  const TrainCallbacks& callbacks_;
  const RunControl& control_;
  scheduler::DevicePool pool_;
  std::unique_ptr<scheduler::Dealer> dealer_;  // the way batches are dealt, picked for the engine options
  merge::GlobalModel global_;
  const nlohmann::json fingerprint_;
  SurvivorMerge survivor_merge_;
  const uint64_t rows_per_epoch_;
  const uint64_t planned_rows_;  // the rows --epochs plans, over which the schedule runs
  uint64_t total_rows_;          // the rows trained: the planned ones, fewer once the held-out rows stop the run
  const std::vector<uint64_t> eval_rows_, all_test_rows_;  // --eval-rows' sample; the whole test set
  const std::vector<uint64_t> holdout_rows_;               // every row of control.stop_holdout
  RunProgress progress_;
  MegaBatchWork open_;      // the mega-batch the run's end cut, kept open (none: !open())
  TrustedStates trusted_;   // the rollback target
  Clock::time_point start_;
  uint64_t rows_reported_ = 0;  // rows trained as the per-batch progress reports them
  double wall_before_ = 0;
  int stopped_by_signal_ = 0;
  uint32_t rollbacks_here_ = 0;  // rollbacks since this process started or resumed the run
  std::string checkpoint_;
  std::string end_checkpoint_error_;  // why the end checkpoint failed, if it did
};

}  // namespace xmlt::run
