// The multi-device training loop; see heterogeneous_trainer.h.
#include "scheduler/heterogeneous_trainer.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <stdexcept>

#include "data/input_error.h"
#include "engine/evaluator.h"
#include "merge/merger.h"
#include "scheduler/batch_size_scaling.h"
#include "scheduler/device_pool.h"
#include "scheduler/run_progress.h"

namespace xmlt::scheduler {
namespace {

using Clock = std::chrono::steady_clock;
double Seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

std::unique_ptr<merge::Merger> MakeMerger(const EngineOptions& engine, size_t devices) {
  merge::MergeOptions options;
  options.momentum = engine.momentum;
  options.momentum_mode = engine.nesterov ? merge::MomentumMode::kNesterov : merge::MomentumMode::kHeavy;
  options.pert_threshold = engine.pert_threshold;
  options.pert_delta = engine.pert_delta;
  options.elastic_alpha = engine.elastic_alpha;
  std::shared_ptr<merge::Collective> collective = merge::MakeCollective(engine.collective, devices);
  using Merge = EngineOptions::Merge;
  switch (engine.merge) {
    case Merge::kNormalized: return merge::MakeNormalizedMerger(options, collective);
    case Merge::kAverage:
      return engine.elastic_alpha > 0 ? merge::MakeElasticForceMerger(options, collective)
                                      : merge::MakeAverageMerger(options, collective);
    case Merge::kAdasum: return merge::MakeAdasumMerger(options);
    case Merge::kCrossbow: return merge::MakeElasticForceMerger(options, collective);
    case Merge::kGradient: return merge::MakeGradientMerger(options, collective);
  }
  throw std::logic_error("unknown merge");
}

// Adds a synchronous round's statistics to the mega-batch it belongs to.
void Absorb(const MegaBatchRun& round, MegaBatchRun* run) {
  for (size_t i = 0; i < round.updates.size(); ++i) {
    run->updates[i] += round.updates[i];
    run->rows_of[i] += round.rows_of[i];
    run->loss_of[i] += round.loss_of[i];
    run->busy_s[i] += round.busy_s[i];
  }
  run->span_s += round.span_s;
  run->batches += round.batches;
  run->rows += round.rows;
  if (run->diverged_on.empty()) run->diverged_on = round.diverged_on;
}

bool AllFinite(const std::vector<float>& values) {
  bool finite = true;
  for (float v : values) finite &= std::isfinite(v);
  return finite;
}

// The merge over the devices still alive; rebuilt when one drops (the collective and the
// weights are sized by the replica count).
class AliveMerge {
 public:
  AliveMerge(const EngineOptions& engine, const kernels::Model<float>& model) : engine_(engine) {
    for (const kernels::LayerView& layer : model.layers) {
      tensors_.push_back(layer.weight.offset);
      tensors_.push_back(layer.bias.offset);
    }
  }

  // Merges the alive devices' replicas into `global`; returns alpha_i per device (0 if dropped).
  merge::MergeOutcome Run(DevicePool& pool, const MegaBatchRun& part, merge::GlobalModel* global) {
    const std::vector<size_t> alive = pool.alive();
    if (alive != devices_) {
      devices_ = alive;
      merger_ = MakeMerger(engine_, alive.size());
    }
    merge::ReplicaSet replicas;
    replicas.size = global->current.size();
    replicas.tensors = tensors_;
    merge::MergeInput input;
    for (size_t i : alive) {
      replicas.params.push_back(pool.device(i).HostParams());
      input.batch.push_back(pool.states()[i].batch);
      input.lr.push_back(pool.states()[i].lr);
      input.updates.push_back(part.updates[i]);
    }
    for (size_t i : alive) pool.device(i).PrepareMerge();
    merge::MergeOutcome outcome = merger_->Merge(replicas, input, global);
    for (size_t i : alive) pool.device(i).FinishMerge();
    std::vector<double> weights(pool.size(), 0.0);
    for (size_t k = 0; k < alive.size(); ++k) weights[alive[k]] = outcome.weights[k];
    outcome.weights = weights;
    return outcome;
  }

 private:
  const EngineOptions& engine_;
  std::vector<size_t> tensors_;
  std::vector<size_t> devices_;
  std::unique_ptr<merge::Merger> merger_;
};

}  // namespace

TrainResult TrainOnDevices(const data::Dataset& train, const data::Dataset* test,
                           const TrainOptions& options, const EngineOptions& engine,
                           kernels::Model<float>* model, const TrainCallbacks& callbacks,
                           const RunControl& control) {
  ValidateTrainOptions(options);
  ValidateEngineOptions(engine);
  DevicePool pool(train, options, engine, *model, control.faults);
  const size_t n = pool.size();
  merge::GlobalModel global{model->params, model->params};
  const nlohmann::json fingerprint = RunFingerprint(options, &engine, model->shape, train);
  RunProgress progress;
  progress.since_eval.resize(n);
  for (size_t i = 0; i < n; ++i) progress.since_eval[i].id = pool.device(i).spec().id;
  auto event = [&](const std::string& text) {
    if (callbacks.on_event) callbacks.on_event(text);
  };

  if (!control.resume_dir.empty()) {
    const CheckpointReader reader = CheckpointReader::Open(control.resume_dir);
    const nlohmann::json meta = ParseCheckpointMeta(reader.meta(), reader.source());
    CheckSameRun(meta.at("run"), fingerprint, reader.source());
    global.current = reader.Read<float>("global.current", global.current.size());
    global.previous = reader.Read<float>("global.previous", global.previous.size());
    try {
      if (!meta.contains("pool")) throw data::InputError(reader.source(), 0, "not a multi-device checkpoint");
      pool.Restore(reader, meta.at("pool"), global.current);
      progress = ProgressFromJson(meta.at("progress"));
    } catch (const nlohmann::json::exception& e) {
      throw data::InputError(reader.source(), 0, std::string("bad checkpoint state: ") + e.what());
    }
    if (progress.since_eval.size() != n) throw data::InputError(reader.source(), 0, "device records do not match --devices");
    if (callbacks.on_resume) callbacks.on_resume(progress.evals);
    event("resumed from " + reader.source() + " at mega-batch " + std::to_string(progress.megabatches));
  }

  const uint64_t rows_per_epoch = pool.rows_per_epoch();
  const uint64_t total_rows = TotalTrainingRows(options, rows_per_epoch, train.source);
  AliveMerge merging(engine, *model);
  TrainResult outcome;  // how the run ended: signal, last checkpoint
  const Clock::time_point start = Clock::now();
  const double wall_before = progress.wall_seconds;
  auto wall_seconds = [&] { return wall_before + Seconds(Clock::now() - start); };

  auto write_checkpoint = [&](const char* why) {
    if (control.checkpoint_dir.empty()) return;
    progress.wall_seconds = wall_seconds();
    const nlohmann::json meta = {{"run", fingerprint}, {"progress", ProgressToJson(progress)}, {"pool", pool.SaveMeta()}};
    CheckpointWriter writer(meta.dump());
    writer.Add("global.current", global.current);
    writer.Add("global.previous", global.previous);
    std::vector<std::vector<float>> momentum;
    pool.AddSections(&writer, &momentum);
    writer.Write(control.checkpoint_dir);
    outcome.checkpoint = CheckpointPath(control.checkpoint_dir);
    event(std::string("checkpoint (") + why + ") at mega-batch " + std::to_string(progress.megabatches) + ": " +
          outcome.checkpoint);
  };

  // The last good state, for rollbacks: the pool's scheduling state, the global model, progress.
  DevicePool::Snapshot good_pool = pool.TakeSnapshot();
  merge::GlobalModel good_global = global;
  RunProgress good_progress = progress;
  std::vector<size_t> alive_before = pool.alive();

  while (progress.rows_done < total_rows) {
    if (control.stop_signal != nullptr && control.stop_signal->load() != 0) {
      outcome.stopped_by_signal = control.stop_signal->load();
      write_checkpoint("stop");
      break;
    }
    if (pool.alive().empty()) {
      write_checkpoint("no device left");
      throw std::runtime_error("every device failed; the run stopped at mega-batch " +
                               std::to_string(progress.megabatches) +
                               (control.checkpoint_dir.empty() ? std::string(" (no --checkpoint-dir: progress is lost)")
                                                               : "; resume with --resume " + control.checkpoint_dir));
    }
    const uint64_t index = progress.megabatches + 1;
    pool.BeginMegaBatch(index);
    const uint64_t epoch_before = progress.rows_done / rows_per_epoch;
    const uint64_t budget = std::min(pool.MegaBatchRows(), total_rows - progress.rows_done);
    double merge_s = 0;
    uint64_t merges = 0;
    merge::MergeOutcome merged;
    auto merge_after = [&](const MegaBatchRun& part) {
      if (pool.alive().empty()) return;
      const Clock::time_point merge_start = Clock::now();
      merged = merging.Run(pool, part, &global);
      merge_s += Seconds(Clock::now() - merge_start);
      ++merges;
    };
    MegaBatchRun run;
    if (engine.schedule == EngineOptions::Schedule::kSync) {
      // Merged after every round; the mega-batch only sets the evaluation cadence.
      run = pool.EmptyRun();
      for (uint64_t left = budget; left > 0 && !pool.alive().empty();) {
        const MegaBatchRun round = pool.RunSyncRound(left);
        left -= std::min(left, round.rows);
        merge_after(round);
        Absorb(round, &run);
      }
    } else {
      run = pool.RunMegaBatch(budget);
      merge_after(run);
    }
    const std::vector<size_t> alive_now = pool.alive();
    for (size_t i : alive_before)
      if (pool.dropped(i))
        event("device " + pool.device(i).spec().id + " dropped in mega-batch " + std::to_string(index) + " (" +
              pool.fault(i) + "); its rows go back to the queue, " + std::to_string(alive_now.size()) +
              " devices go on");
    alive_before = alive_now;
    if (alive_now.empty()) continue;  // nothing merged; the loop's top checkpoints and stops

    if (!run.diverged_on.empty() || !AllFinite(global.current)) {
      const std::string what = !run.diverged_on.empty() ? "non-finite loss on " + run.diverged_on
                                                        : std::string("non-finite merged model");
      const uint32_t rollbacks = progress.rollbacks + 1;
      global = good_global;
      progress = good_progress;
      progress.rollbacks = rollbacks;
      progress.train_seconds += run.span_s;  // the lost mega-batch took time all the same
      pool.RollBack(good_pool, global.current);
      if (rollbacks > control.max_rollbacks) {
        write_checkpoint("last good state");
        throw std::runtime_error("training diverged in mega-batch " + std::to_string(index) + " (" + what + ") after " +
                                 std::to_string(control.max_rollbacks) +
                                 " rollbacks with halved learning rates (--max-rollbacks); lower --lr");
      }
      event("diverged in mega-batch " + std::to_string(index) + " (" + what + "): rolled back to mega-batch " +
            std::to_string(progress.megabatches) + ", learning rates halved (rollback " + std::to_string(rollbacks) +
            " of at most " + std::to_string(control.max_rollbacks) + ")");
      good_pool = pool.TakeSnapshot();
      good_progress = progress;
      continue;
    }

    progress.rows_done += run.rows;
    ++progress.megabatches;
    progress.batches += run.batches;
    for (double device_loss : run.loss_of) progress.loss_sum += device_loss;
    progress.loss_batches += run.batches;

    // Merges cost time too: measured on the wall clock; on the virtual clock a cost per parameter
    // and replica (given, or calibrated on the first merge), so that algorithms merging every
    // step (sync, crossbow) pay for it deterministically.
    if (engine.clock == EngineOptions::Clock::kWall) {
      progress.train_seconds += run.span_s + merge_s;
    } else if (merges > 0) {
      const double units = double(global.current.size()) * double(alive_now.size());
      if (progress.merge_cost_s == 0)
        progress.merge_cost_s = engine.merge_cost_s > 0 ? engine.merge_cost_s : merge_s / double(merges) / units;
      progress.train_seconds += run.span_s + double(merges) * units * progress.merge_cost_s;
    }
    for (size_t i = 0; i < n; ++i) {
      DeviceRecord& d = progress.since_eval[i];
      d.batch = RowsForBatch(pool.states()[i].batch);
      d.lr = pool.states()[i].lr;
      d.updates += run.updates[i];
      d.rows += run.rows_of[i];
      d.weight = merged.weights.empty() ? 0.0 : merged.weights[i];
      d.busy_s += run.busy_s[i];
      if (!pool.dropped(i)) d.idle_s += std::max(0.0, run.span_s - run.busy_s[i]);
      d.dropped = pool.dropped(i);
      d.fault = pool.fault(i);
    }
    if (engine.scale_batches && engine.schedule == EngineOptions::Schedule::kDynamic) {
      // Algorithm 1 over the devices still alive (a dropped one's zero updates would skew the mean).
      std::vector<uint64_t> updates;
      std::vector<DeviceBatch> states;
      for (size_t i : alive_now) updates.push_back(run.updates[i]), states.push_back(pool.states()[i]);
      ScaleBatchSizes(updates, pool.bounds(), &states);
      for (size_t k = 0; k < alive_now.size(); ++k) pool.states()[alive_now[k]] = states[k];
    }

    const bool finished = progress.rows_done >= total_rows;
    bool due = finished;
    switch (options.eval.kind) {
      case EvalSchedule::Kind::kEachEpoch: due = due || progress.rows_done / rows_per_epoch > epoch_before; break;
      case EvalSchedule::Kind::kEnd: break;
      case EvalSchedule::Kind::kEveryMegaBatches:
        due = due || progress.megabatches % options.eval.mega_batches == 0;
        break;
    }
    if (due) {
      EvalRecord record;
      const Clock::time_point eval_start = Clock::now();
      model->params = global.current;
      if (test != nullptr) record.test = engine::Evaluate(*model, *test);
      record.eval_time_s = Seconds(Clock::now() - eval_start);
      record.megabatch = progress.megabatches;
      record.epoch = double(progress.rows_done) / double(rows_per_epoch);
      record.train_time_s = progress.train_seconds;
      record.wall_time_s = wall_seconds();
      record.train_samples = progress.rows_done;
      record.train_loss = progress.loss_batches > 0 ? progress.loss_sum / double(progress.loss_batches) : 0.0;
      record.perturbed = merged.perturbed;
      record.rollbacks = progress.rollbacks;
      record.devices = progress.since_eval;
      for (DeviceRecord& d : progress.since_eval) d.updates = d.rows = 0, d.busy_s = d.idle_s = 0;
      progress.loss_sum = 0;
      progress.loss_batches = 0;
      progress.evals.push_back(record);
      if (callbacks.on_eval) callbacks.on_eval(record);
    }
    if (callbacks.on_progress) {
      double mean_loss = 0;
      for (double device_loss : run.loss_of) mean_loss += device_loss;
      callbacks.on_progress(progress.rows_done, total_rows, run.batches > 0 ? mean_loss / double(run.batches) : 0.0);
    }

    good_pool = pool.TakeSnapshot();
    good_global = global;
    good_progress = progress;
    if (finished) {
      write_checkpoint("end");
    } else if (control.checkpoint_every > 0 && progress.megabatches % control.checkpoint_every == 0) {
      write_checkpoint("periodic");
    }
  }
  model->params = global.current;
  TrainResult result = ResultOf(progress);
  result.stopped_by_signal = outcome.stopped_by_signal;
  result.checkpoint = outcome.checkpoint;
  return result;
}

}  // namespace xmlt::scheduler
