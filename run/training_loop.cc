// The multi-device training loop; see training_loop.h and multi_device_run.h.
#include "run/training_loop.h"

#include <algorithm>
#include <cmath>

#include "engine/evaluator.h"
#include "kernels/dropout_mask.h"
#include "run/multi_device_run.h"
#include "scheduler/rank_exchange.h"
#include "scheduler/virtual_clock_costs.h"

namespace xmlt::run {
namespace {

double Seconds(std::chrono::steady_clock::duration d) { return std::chrono::duration<double>(d).count(); }

}  // namespace

TrainingLoop::TrainingLoop(const data::Dataset& train, const data::Dataset* test,
                           const scheduler::TrainOptions& options, const scheduler::SchedulerOptions& scheduling,
                           kernels::Model<float>* model, const TrainCallbacks& callbacks, const RunControl& control,
                           ranks::RankGroup* ranks)
    : test_(test),
      options_(options),
      scheduling_(scheduling),
      model_(model),
      callbacks_(callbacks),
      control_(control),
      pool_(train, options, scheduling, *model, control.faults, ranks),
      dealer_(scheduler::MakeDealer(pool_)),
      global_{model->params, scheduler::KeepsPreviousModel(scheduling) ? model->params : std::vector<float>{}},
      fingerprint_(WithOuterSettings(RunFingerprint(options, scheduling, model->shape, train, test),
                                     control.outer_settings, control.notes)),
      survivor_merge_(scheduling, *model),
      rows_per_epoch_(pool_.rows_per_epoch()),
      planned_rows_(scheduler::TotalTrainingRows(options, rows_per_epoch_, train.source)),
      total_rows_(planned_rows_),
      eval_rows_(test == nullptr ? std::vector<uint64_t>{} : scheduler::EvalSample(test->num_rows(), options)),
      all_test_rows_(test == nullptr ? std::vector<uint64_t>{} : engine::SampleEvalRows(test->num_rows(), 0, 0)),
      holdout_rows_(control.stop_holdout == nullptr ? std::vector<uint64_t>{}
                                                    : engine::SampleEvalRows(control.stop_holdout->num_rows(), 0, 0)) {
  progress_.since_eval.resize(pool_.size());
  pool_.OnBatch([this](const engine::BatchResult& result) {
    if (result.error || !callbacks_.on_progress) return;
    rows_reported_ += result.count;
    callbacks_.on_progress(std::min(rows_reported_, total_rows_), total_rows_,
                           result.loss_sum / std::max<uint32_t>(result.labeled_rows, 1));
  });
  for (size_t i = 0; i < pool_.size(); ++i) progress_.since_eval[i].id = pool_.device(i).spec().id;
  // The virtual clock's costs not given: the cost model's, unless measuring was asked for (then
  // the first mega-batch and merge calibrate them, result_tally.cc and loop_records.cc).
  if (scheduling.clock == scheduler::SchedulerOptions::Clock::kVirtual && !scheduling.measure_clock_costs) {
    const bool every_device_sampled =
        scheduling.sampled_output.enabled && std::all_of(scheduling.devices.begin(), scheduling.devices.end(), [](const auto& d) {
          return d.kind == engine::DeviceKind::kCpu;
        });
    const scheduler::ClockCosts costs =
        scheduler::ModelClockCosts(model->shape, train, scheduling.sampled_output, every_device_sampled);
    if (scheduling.row_cost_s == 0) pool_.row_cost_s() = costs.row_cost_s;
    if (scheduling.merge_cost_s == 0) progress_.merge_cost_s = costs.merge_cost_s;
  }
  // The caller's model is the global model's start, copied above into w, w_p and the replicas; its
  // parameters are not held while training (evaluations borrow w), and Train gives them back.
  std::vector<float>().swap(model_->params);
}

TrainResult TrainingLoop::Run() {
  if (!control_.resume_dir.empty()) Resume();
  wall_before_ = progress_.wall_seconds;
  start_ = Clock::now();
  trusted_.TrustNow(Capture(), scheduler::RollbackLendsGlobalModel(scheduling_));
  std::vector<size_t> alive_before;
  while (progress_.rows_done < total_rows_) {
    alive_before = pool_.alive();  // a device dropped in an evaluation was reported there
    if (const int signal = StopSignal(); signal != 0) {
      stopped_by_signal_ = signal;
      WriteCheckpoint("stop");
      break;
    }
    if (pool_.alive().empty()) StopWithoutDevices();
    const uint64_t index = progress_.megabatches + 1;
    const uint64_t epoch_before = progress_.rows_done / rows_per_epoch_;
    MegaBatchWork trained = TrainMegaBatch(index);
    for (size_t i : alive_before)
      if (pool_.dropped(i))
        Event("device " + pool_.device(i).spec().id + " dropped in mega-batch " + std::to_string(index) + " (" +
              pool_.fault(i) + "); its rows go back to the queue, " + std::to_string(pool_.alive().size()) +
              " devices go on");
    alive_before = pool_.alive();
    if (alive_before.empty()) continue;  // nothing was merged; the loop's top checkpoints and stops
    if (!trained.run.diverged_on.empty() || !global_.CurrentFinite()) {
      RollBack(index, trained.run);
      continue;  // a stop is seen at the loop's top, after the rollback
    }
    if (trained.stopped) {
      // At the next batch rather than the mega-batch's end; the checkpoint keeps the mega-batch
      // open, as the end of a run does, and a resumed run goes on with it.
      stopped_by_signal_ = control_.stop_signal->load();
      if (trained.planned > 0) open_ = trained;
      WriteCheckpoint("stop");
      break;
    }
    if (trained.cut_by_end) {
      // The run's end cut this mega-batch. The end checkpoint keeps it open, as it stands before
      // its merge; a run extended from there trains its rest and merges it whole, as a run that
      // never stopped does. This run merges it now for its model.
      open_ = trained;
      TryWriteEndCheckpoint();
      open_ = MegaBatchWork{};
      if (!dealer_->MergesEachRound()) MergeInto(&trained);
      if (!global_.CurrentFinite()) {
        RollBack(index, trained.run);
        continue;
      }
    }
    Account(trained);
    WatchHoldout(epoch_before);
    const bool finished = progress_.rows_done >= total_rows_;
    const bool due = !trained.cut_by_end && EvaluationDue(epoch_before);
    if (due) Evaluate();
    trusted_.TrustLatest(global_.current());
    trusted_.Keep(Capture(!trusted_.lends_w()));
    if (finished) {
      // The end's own evaluation comes after the end checkpoint, which thus holds the run as a
      // longer one passes through this point.
      if (!trained.cut_by_end) TryWriteEndCheckpoint();
      if (!due) Evaluate();
    } else if (control_.checkpoint_every > 0 && progress_.megabatches % control_.checkpoint_every == 0) {
      TryWritePeriodicCheckpoint();
    }
  }
  // A finished run resumed as it is (the same --epochs) ends with its end evaluation again, which
  // its checkpoint, written before it, does not hold.
  const bool finished = stopped_by_signal_ == 0 && progress_.rows_done >= total_rows_;
  if (finished && (progress_.evals.empty() || progress_.evals.back().train_samples != progress_.rows_done)) Evaluate();
  // The rollback states go before w is handed back, by move: the run's end holds no extra copy.
  trusted_.Clear();
  global_.SyncToHost();
  model_->params = std::move(global_.MutableCurrent());
  TrainResult result = ResultOf(progress_);
  result.stopped_by_signal = stopped_by_signal_;
  result.checkpoint = checkpoint_;
  result.end_checkpoint_error = end_checkpoint_error_;
  result.planned_epochs = double(planned_rows_) / double(rows_per_epoch_);
  if (progress_.stopped_by_holdout_at > 0)
    result.stopped_by_holdout_epoch = double(progress_.stopped_by_holdout_at) / double(rows_per_epoch_);
  if (scheduling_.clock == scheduler::SchedulerOptions::Clock::kVirtual) {
    result.row_cost_s = pool_.row_cost_s();
    result.merge_cost_s = progress_.merge_cost_s;
  }
  return result;
}

// Trains mega-batch `index`, or the rest of the open one, up to the run's end, and merges it
// unless the end cut it (the caller merges that after the end checkpoint). Sync merges every
// round; its mega-batch only sets the evaluation cadence.
MegaBatchWork TrainingLoop::TrainMegaBatch(uint64_t index) {
  pool_.BeginMegaBatch(index);
  // The schedule's factor from the rows merged before this mega-batch: the open one a resumed run
  // goes on with trains at the factor it started with.
  pool_.SetLrScale(scheduler::LrScale(options_.lr_schedule, progress_.rows_done, planned_rows_));
  rows_reported_ = TrainedRows();
  const bool continues = open_.open();
  MegaBatchWork trained = continues ? open_ : MegaBatchWork{};
  open_ = MegaBatchWork{};
  if (!continues) {
    trained.run = pool_.EmptyRun();
    uint64_t rows = pool_.MegaBatchRows();
    if (options_.mega_batch_warmup)
      rows = WarmUpMegaBatchRows(rows, uint64_t(std::max<size_t>(pool_.alive().size(), 1)) * options_.batch, index);
    trained.mega_batch_rows = MegaBatchRowsHere(rows, pool_.rows().ToEpochEnd());
  }
  const uint64_t left = trained.mega_batch_rows > trained.planned ? trained.mega_batch_rows - trained.planned : 0;
  const uint64_t to_end = total_rows_ - std::min(total_rows_, progress_.rows_done + trained.run.rows);
  scheduler::DealRequest request;
  request.budget = std::min(left, to_end);
  request.cap = to_end;
  request.continues = continues;
  request.stop = StopWithinMegaBatch();
  request.merge_round = [&](const scheduler::MegaBatchRun& round) { MergeAfterRound(round, &trained); };
  const scheduler::Dealt dealt = dealer_->Deal(request, &trained.run);
  trained.planned += dealt.rows;
  trained.stopped = dealt.stopped;
  // A stop keeps the mega-batch open (it is checkpointed before its merge and goes on after a
  // resume), and so does the run's end, which the caller merges after its checkpoint.
  trained.cut_by_end = !trained.stopped && to_end < left;
  if (!trained.stopped && !trained.cut_by_end && !dealer_->MergesEachRound()) MergeInto(&trained);
  return trained;
}

uint32_t TrainingLoop::MergeRoundingKey(const MegaBatchWork& trained) const {
  // SplitMix64's finalizer over (seed, mega-batch, merge), salted apart from the devices' keys.
  constexpr uint64_t kMergeRoundingSalt = 0x6a09e667f3bcc909ULL;
  uint64_t x = options_.seed ^ kMergeRoundingSalt;
  for (uint64_t part : {progress_.megabatches, trained.merges}) x = kernels::DropoutMix(x ^ part);
  return uint32_t(x ^ (x >> 32));
}

void TrainingLoop::MergeAfterRound(const scheduler::MegaBatchRun& round, MegaBatchWork* trained) {
  if (pool_.alive().empty()) return;
  const Clock::time_point merge_start = Clock::now();
  const uint64_t lost_before = survivor_merge_.global_models_lost();
  // A copy merge can only make w non-finite from a non-finite replica, so the mega-batch is known
  // sound before it: the state before it is trusted now, into w's buffer (TrustLatestAtMerge).
  if (trusted_.lends_w() && round.diverged_on.empty() && ReplicaFinite())
    trusted_.TrustLatestAtMerge(&global_.MutableCurrent());
  trained->merged = survivor_merge_.Run(pool_, round, &global_, MergeRoundingKey(*trained));
  trained->merge_s += Seconds(Clock::now() - merge_start);
  if (survivor_merge_.global_models_lost() != lost_before)
    Event("a lost GPU cut the merge or held part of the global model: the run goes on from the host's copy of the "
          "global model, made after mega-batch " + std::to_string(progress_.megabatches));
  ++trained->merges;
}

// Back to the trusted state, learning rates halved; the global momentum goes too (w_p = w), as
// the replicas' does, since both may carry the divergence. The clock keeps the lost time, and
// the evaluations made since stay on record (they were reported).
void TrainingLoop::RollBack(uint64_t index, const scheduler::MegaBatchRun& run) {
  const std::string what = !run.diverged_on.empty() ? run.divergence + " on " + run.diverged_on
                                                    : std::string("non-finite merged model");
  const uint32_t rollbacks = progress_.rollbacks + 1;  // the whole run's, in the metrics
  // --max-rollbacks bounds what this process tries. The checkpoint's count is left out: a run
  // resumed after a divergence stop (with a lower --lr, as the stop advises) would otherwise
  // stop at its first divergence, "after N rollbacks" none of which it made.
  ++rollbacks_here_;
  const double spent = progress_.train_seconds + run.span_s;
  std::vector<EvalRecord> evals = std::move(progress_.evals);
  const SavedState& trusted = trusted_.trusted();
  global_.Assign(trusted.global, global_.previous_size() > 0 ? trusted.global : std::vector<float>{});
  progress_ = trusted.progress;
  progress_.rollbacks = rollbacks;
  progress_.train_seconds = spent;
  progress_.evals = std::move(evals);
  // An open mega-batch's rows stay dealt out, but what the replicas learnt from them is gone
  // with the replicas: its merge weighs only what they train from here.
  open_ = trusted.open;
  if (open_.open()) {
    const uint64_t planned = open_.planned, rows = open_.mega_batch_rows;
    open_ = MegaBatchWork{};
    open_.run = pool_.EmptyRun();
    open_.planned = planned;
    open_.mega_batch_rows = rows;
  }
  xmlt::run::RollBack(pool_, trusted.pool, global_.current());
  if (rollbacks_here_ > control_.max_rollbacks) {
    WriteCheckpoint("last good state");
    throw RunStopped(RunStopped::Why::kDiverged,
                     "training diverged in mega-batch " + std::to_string(index) + " (" + what + ") after " +
                         std::to_string(control_.max_rollbacks) + " rollbacks with halved learning rates",
                     control_.checkpoint_dir);
  }
  Event("diverged in mega-batch " + std::to_string(index) + " (" + what + "): rolled back to mega-batch " +
        std::to_string(progress_.megabatches) + ", learning rates halved (rollback " + std::to_string(rollbacks_here_) +
        " of at most " + std::to_string(control_.max_rollbacks) + ")");
  const bool lend_w = trusted_.lends_w();
  trusted_.Clear();  // before the copy below: a rollback holds no third copy either
  trusted_.TrustNow(Capture(), lend_w);
}

bool TrainingLoop::ReplicaFinite() {
  if (pool_.alive().size() != 1) return false;
  bool finite = true;
  pool_.device(pool_.alive()[0]).StreamParams([&](const float* params, size_t count) {
    for (size_t i = 0; i < count; ++i) finite &= std::isfinite(params[i]);
  });
  return finite;
}

// The stop signal as every rank sees it: across ranks the largest any rank got, agreed between
// mega-batches (within one, each rank's plan must go on to the same end).
int TrainingLoop::StopSignal() const {
  const int signal = control_.stop_signal != nullptr ? control_.stop_signal->load() : 0;
  return pool_.ranks() != nullptr ? scheduler::AgreeOnMax(*pool_.ranks(), signal) : signal;
}

const std::atomic<int>* TrainingLoop::StopWithinMegaBatch() const {
  return pool_.ranks() != nullptr ? nullptr : control_.stop_signal;
}

void TrainingLoop::StopWithoutDevices() {
  WriteCheckpoint("no device left");
  std::string faults;  // each device's, so that the stop names what was lost and why
  for (size_t i = 0; i < pool_.size(); ++i)
    faults += (faults.empty() ? "" : "; ") + pool_.device(i).spec().id + ": " + pool_.fault(i);
  throw RunStopped(RunStopped::Why::kNoDevice,
                   "every device failed (" + faults + "); the run stopped at mega-batch " +
                       std::to_string(progress_.megabatches),
                   control_.checkpoint_dir);
}

void TrainingLoop::Event(const std::string& text) const {
  if (callbacks_.on_event) callbacks_.on_event(text);
}

double TrainingLoop::WallSeconds() const { return wall_before_ + Seconds(Clock::now() - start_); }

TrainResult RunMultiDevice(const data::Dataset& train, const data::Dataset* test,
                           const scheduler::TrainOptions& options, const scheduler::SchedulerOptions& scheduling,
                           kernels::Model<float>* model, const TrainCallbacks& callbacks,
                           const RunControl& control, ranks::RankGroup* ranks) {
  scheduler::ValidateTrainOptions(options);
  scheduler::ValidateSchedulerOptions(scheduling);
  return TrainingLoop(train, test, options, scheduling, model, callbacks, control, ranks).Run();
}

}  // namespace xmlt::run
