// The training loop's counters, clocks and evaluations. See training_loop.h.
#include <algorithm>
#include <cstdio>

#include "run/device_evaluation.h"
#include "run/holdout_stop.h"
#include "run/training_loop.h"
#include "scheduler/batch_size_scaling.h"
#include "scheduler/lr_schedule.h"
#include "scheduler/rank_exchange.h"

namespace xmlt::run {

// Counters, clocks, per-device records and Algorithm 1 after a good mega-batch.
void TrainingLoop::Account(const MegaBatchWork& trained) {
  const scheduler::MegaBatchRun& run = trained.run;
  const std::vector<size_t> alive = pool_.alive();
  progress_.rows_done += run.rows;
  ++progress_.megabatches;
  progress_.last_perturbed = trained.merged.perturbed;
  progress_.batches += run.batches;
  for (double device_loss : run.loss_of) progress_.loss_sum += device_loss;
  progress_.loss_batches += run.batches;

  // Merges cost time too: measured on the wall clock; on the virtual clock a cost per parameter
  // and replica (given, or calibrated on the first merge), so that algorithms merging every
  // step (sync, crossbow) pay for it deterministically.
  if (scheduling_.clock == scheduler::SchedulerOptions::Clock::kWall) {
    progress_.train_seconds += run.span_s + trained.merge_s;
  } else if (trained.merges > 0) {
    const double units = double(global_.size()) * double(alive.size());
    if (progress_.merge_cost_s == 0) {
      progress_.merge_cost_s =
          scheduling_.merge_cost_s > 0 ? scheduling_.merge_cost_s : trained.merge_s / double(trained.merges) / units;
      // Measured, it differs from rank to rank; rank 0's holds for all.
      if (pool_.ranks() != nullptr)
        progress_.merge_cost_s = scheduler::FromRank(*pool_.ranks(), progress_.merge_cost_s, 0);
    }
    progress_.train_seconds += run.span_s + double(trained.merges) * units * progress_.merge_cost_s;
  }
  for (size_t i = 0; i < pool_.size(); ++i) {
    DeviceRecord& d = progress_.since_eval[i];
    d.batch = scheduler::RowsForBatch(pool_.states()[i].batch);
    d.lr = pool_.states()[i].lr;
    d.updates += run.updates[i];
    d.rows += run.rows_of[i];
    d.weight = trained.merged.weights.empty() ? 0.0 : trained.merged.weights[i];
    d.busy_s += run.busy_s[i];
    if (!pool_.dropped(i)) d.idle_s += std::max(0.0, run.span_s - run.busy_s[i]);
    d.dropped = pool_.dropped(i);
    d.fault = pool_.fault(i);
  }
  if (scheduling_.scale_batches && scheduling_.schedule == scheduler::SchedulerOptions::Schedule::kDynamic) {
    // Algorithm 1 over the devices still alive (a dropped one's zero updates would skew the mean).
    std::vector<uint64_t> updates;
    std::vector<scheduler::BatchSizeAndLr> states;
    for (size_t i : alive) updates.push_back(run.updates[i]), states.push_back(pool_.states()[i]);
    scheduler::ScaleBatchSizes(updates, pool_.bounds(), &states);
    for (size_t k = 0; k < alive.size(); ++k) pool_.states()[alive[k]] = states[k];
  }
}

// On the schedule; the run's end adds its own evaluation (Train).
bool TrainingLoop::EvaluationDue(uint64_t epoch_before) const {
  switch (options_.eval.kind) {
    case scheduler::EvalSchedule::Kind::kEachEpoch: return progress_.rows_done / rows_per_epoch_ > epoch_before;
    case scheduler::EvalSchedule::Kind::kEnd: return false;
    case scheduler::EvalSchedule::Kind::kEveryMegaBatches:
      return progress_.megabatches % options_.eval.mega_batches == 0;
  }
  return false;
}

std::optional<engine::Evaluation> TrainingLoop::ScoreGlobalModel(const data::Dataset& data,
                                                                 const std::vector<uint64_t>& rows) {
  global_.SyncToHost();
  const std::vector<size_t> alive_before = pool_.alive();
  // w is lent to the model the evaluation reads, and given back however it ends: no copy of the
  // model is held for evaluations (the constructor released the caller's).
  std::optional<engine::Evaluation> scored;
  {
    struct Lent {
      std::vector<float>& params;
      merge::GlobalModel& global;
      Lent(std::vector<float>& p, merge::GlobalModel& g) : params(p), global(g) { global.SwapCurrent(&params); }
      ~Lent() { global.SwapCurrent(&params); }
    } lent(model_->params, global_);
    scored = EvaluateOnDevices(pool_, *model_, data, rows);
  }
  for (size_t i : alive_before)
    if (pool_.dropped(i))
      Event("device " + pool_.device(i).spec().id + " dropped in the evaluation after mega-batch " +
            std::to_string(progress_.megabatches) + " (" + pool_.fault(i) + ")" +
            (scored ? "; the evaluation was scored on the " + std::to_string(pool_.alive().size()) +
                          " devices left, which go on"
                    : std::string()));
  return scored;
}

void TrainingLoop::Evaluate() {
  EvalRecord record;
  const Clock::time_point eval_start = Clock::now();
  global_.SyncToHost();
  if (test_ != nullptr) {
    const bool whole = progress_.rows_done >= total_rows_ && options_.final_eval_full;
    const std::optional<engine::Evaluation> scored = ScoreGlobalModel(*test_, whole ? all_test_rows_ : eval_rows_);
    // The global model is whole on the host (synced above): the run checkpoints it and stops, as
    // when its last device fails in training. This evaluation is not in the checkpoint.
    if (!scored) StopWithoutDevices();
    record.test = *scored;
    for (size_t i = 0; i < pool_.size(); ++i) {
      progress_.since_eval[i].dropped = pool_.dropped(i);
      progress_.since_eval[i].fault = pool_.fault(i);
    }
  }
  record.eval_time_s = std::chrono::duration<double>(Clock::now() - eval_start).count();
  record.megabatch = progress_.megabatches;
  record.epoch = double(progress_.rows_done) / double(rows_per_epoch_);
  record.train_time_s = progress_.train_seconds;
  record.wall_time_s = WallSeconds();
  record.train_samples = progress_.rows_done;
  record.train_loss = progress_.loss_batches > 0 ? progress_.loss_sum / double(progress_.loss_batches) : 0.0;
  record.perturbed = progress_.last_perturbed;
  record.rollbacks = progress_.rollbacks;
  record.lr_scale = pool_.lr_scale();
  record.devices = progress_.since_eval;
  for (DeviceRecord& d : progress_.since_eval) d.updates = d.rows = 0, d.busy_s = d.idle_s = 0;
  progress_.loss_sum = 0;
  progress_.loss_batches = 0;
  progress_.evals.push_back(record);
  if (callbacks_.on_eval) callbacks_.on_eval(record);
}

void TrainingLoop::WatchHoldout(uint64_t epoch_before) {
  const HoldoutStopRule& rule = control_.holdout_rule;
  if (control_.stop_holdout == nullptr || holdout_rows_.empty() || holdout_rows_.size() < rule.min_rows) return;
  if (progress_.rows_done >= total_rows_ || progress_.rows_done / rows_per_epoch_ <= epoch_before) return;
  // The factor the next epoch would train at: only the annealed tail is watched.
  if (scheduler::LrScale(options_.lr_schedule, progress_.rows_done, planned_rows_) >= rule.watch_below_lr_scale) return;
  const std::optional<engine::Evaluation> scored = ScoreGlobalModel(*control_.stop_holdout, holdout_rows_);
  if (!scored) StopWithoutDevices();
  const kernels::TopKMetrics& m = scored->metrics;
  double score = (m.p1 + m.p3 + m.p5) / 3;
  // Every rank stops at the same epoch: rank 0's score decides.
  if (pool_.ranks() != nullptr) score = scheduler::FromRank(*pool_.ranks(), score, 0);
  const uint64_t epoch = progress_.rows_done / rows_per_epoch_;
  progress_.holdout_scores.push_back({epoch, score});
  if (!HoldoutStops(progress_.holdout_scores, rule)) return;
  total_rows_ = progress_.rows_done;
  progress_.stopped_by_holdout_at = progress_.rows_done;
  char text[200];
  std::snprintf(text, sizeof(text),
                "stopped after epoch %llu of %.4g: the %zu held-out rows' mean P@1/3/5 (%.4f) gained less than %.4g "
                "in the last %u epochs",
                static_cast<unsigned long long>(epoch), double(planned_rows_) / double(rows_per_epoch_),
                holdout_rows_.size(), score, rule.min_gain, rule.patience);
  Event(text);
}

}  // namespace xmlt::run
