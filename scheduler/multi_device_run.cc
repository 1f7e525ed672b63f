// The multi-device training loop; see multi_device_run.h.
#include "scheduler/multi_device_run.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <optional>
#include <stdexcept>

#include "data/input_error.h"
#include "engine/evaluator.h"
#include "merge/merger.h"
#include "merge/rank_sum_collective.h"
#include "scheduler/batch_size_scaling.h"
#include "scheduler/device_pool.h"
#include "scheduler/rank_exchange.h"
#include "scheduler/run_progress.h"

namespace xmlt::scheduler {
namespace {

using Clock = std::chrono::steady_clock;
double Seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

// The merge over `devices` alive devices; `is_local` (one per alive device) is given across ranks.
std::unique_ptr<merge::Merger> MakeMerger(const EngineOptions& engine, size_t devices,
                                          const std::vector<bool>& is_local) {
  merge::MergeOptions options;
  options.momentum = engine.momentum;
  options.momentum_mode = engine.nesterov ? merge::MomentumMode::kNesterov : merge::MomentumMode::kHeavy;
  options.pert_threshold = engine.pert_threshold;
  options.pert_delta = engine.pert_delta;
  options.renormalize_perturbed = engine.pert_renormalize;
  options.elastic_alpha = engine.elastic_alpha;
  std::shared_ptr<merge::Collective> collective = merge::MakeCollective(engine.collective, devices);
  if (!is_local.empty() && MergesByWeightedSum(engine)) {
    // The rank's own collective keeps the one-process partitioning: norms are the same bits.
    collective = merge::MakeRankSumCollective(merge::MakeCollective(engine.collective, devices),
                                              *engine.ranks, is_local);
  }
  using Merge = EngineOptions::Merge;
  switch (engine.merge) {
    case Merge::kNormalized: return merge::MakeNormalizedMerger(options, collective);
    case Merge::kAverage:
      return engine.elastic_alpha > 0 ? merge::MakeElasticForceMerger(options, collective)
                                      : merge::MakeAverageMerger(options, collective);
    case Merge::kAdasum: return merge::MakeAdasumMerger(options);
    case Merge::kCrossbow: return merge::MakeElasticForceMerger(options, collective);
    case Merge::kGradient: return merge::MakeGradientMerger(options, collective);
    case Merge::kCopy: return merge::MakeCopyMerger();
  }
  throw std::logic_error("unknown merge");
}

// Adds a synchronous round's statistics to the mega-batch it belongs to.
void AddRound(const MegaBatchRun& round, MegaBatchRun* run) {
  for (size_t i = 0; i < round.updates.size(); ++i) {
    run->updates[i] += round.updates[i];
    run->rows_of[i] += round.rows_of[i];
    run->loss_of[i] += round.loss_of[i];
    run->busy_s[i] += round.busy_s[i];
  }
  run->span_s += round.span_s;
  run->batches += round.batches;
  run->rows += round.rows;
  if (run->diverged_on.empty()) run->diverged_on = round.diverged_on, run->divergence = round.divergence;
}

// A mega-batch ends at the end of an epoch at the latest, so that evaluations fall on epoch ends
// and a run of whole epochs ends with a whole mega-batch; and it runs on to the epoch's end rather
// than leave less than half a mega-batch there, which would be merged (and rescaled on) alone.
uint64_t MegaBatchRowsHere(uint64_t mega_batch_rows, uint64_t rows_to_epoch_end) {
  return rows_to_epoch_end <= mega_batch_rows + mega_batch_rows / 2 ? rows_to_epoch_end : mega_batch_rows;
}

bool AllFinite(const std::vector<float>& values) {
  bool finite = true;
  for (float v : values) finite &= std::isfinite(v);
  return finite;
}

// The merge over the devices still alive; rebuilt when one drops (the collective and the
// weights are sized by the replica count).
class SurvivorMerge {
 public:
  SurvivorMerge(const EngineOptions& engine, const kernels::Model<float>& model) : engine_(engine) {
    for (const kernels::LayerView& layer : model.layers) {
      tensors_.push_back(layer.weight.offset);
      tensors_.push_back(layer.bias.offset);
    }
  }

  // Merges the alive devices' replicas into `global`; returns alpha_i per device (0 if dropped).
  merge::MergeOutcome Run(DevicePool& pool, const MegaBatchRun& part, merge::GlobalModel* global) {
    const std::vector<size_t> alive = pool.alive();
    const bool across_ranks = engine_.ranks != nullptr && engine_.ranks->size() > 1;
    if (alive != devices_) {
      devices_ = alive;
      std::vector<bool> is_local;
      if (across_ranks)
        for (size_t i : alive) is_local.push_back(pool.local(i));
      merger_ = MakeMerger(engine_, alive.size(), is_local);
    }
    merge::ReplicaSet replicas;
    replicas.size = global->current.size();
    replicas.tensors = tensors_;
    merge::MergeInput input;
    // A hierarchical merge reads this rank's replicas only: the others' mirrors are not even made.
    const bool local_only = across_ranks && MergesByWeightedSum(engine_);
    for (size_t i : alive) {
      replicas.params.push_back(local_only && !pool.local(i) ? nullptr : pool.device(i).HostParams());
      input.batch.push_back(pool.states()[i].batch);
      input.lr.push_back(pool.states()[i].lr);
      input.updates.push_back(part.updates[i]);
    }
    for (size_t i : alive) pool.device(i).PrepareMerge();
    // Across ranks a weighted sum is hierarchical (the rank sum collective reads local replicas
    // only); the other merges read every replica on every rank, so the mirrors of the other ranks'
    // devices are filled first. Either way every rank ends with the same bits.
    if (across_ranks && !MergesByWeightedSum(engine_)) pool.ShareReplicas();
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

// One multi-device run: the devices, the global model, the bookkeeping, and the last good state
// to roll back to. Train() is the loop; each step of it is a method.
class MultiDeviceRun {
 public:
  MultiDeviceRun(const data::Dataset& train, const data::Dataset* test, const TrainOptions& options,
                 const EngineOptions& engine, kernels::Model<float>* model, const TrainCallbacks& callbacks,
                 const RunControl& control)
      : test_(test),
        options_(options),
        engine_(engine),
        model_(model),
        callbacks_(callbacks),
        control_(control),
        pool_(train, options, engine, *model, control.faults),
        global_{model->params, model->params},
        fingerprint_(RunFingerprint(options, engine, model->shape, train, test)),
        survivor_merge_(engine, *model),
        rows_per_epoch_(pool_.rows_per_epoch()),
        total_rows_(TotalTrainingRows(options, rows_per_epoch_, train.source)),
        eval_rows_(test == nullptr ? std::vector<uint64_t>{} : EvalSample(test->num_rows(), options)),
        all_test_rows_(test == nullptr ? std::vector<uint64_t>{} : engine::SampleEvalRows(test->num_rows(), 0, 0)) {
    progress_.since_eval.resize(pool_.size());
    pool_.OnBatch([this](const engine::BatchResult& result) {
      if (result.error || !callbacks_.on_progress) return;
      rows_reported_ += result.count;
      callbacks_.on_progress(std::min(rows_reported_, total_rows_), total_rows_,
                             result.loss_sum / std::max<uint32_t>(result.labeled_rows, 1));
    });
    for (size_t i = 0; i < pool_.size(); ++i) progress_.since_eval[i].id = pool_.device(i).spec().id;
  }

  TrainResult Train() {
    if (!control_.resume_dir.empty()) Resume();
    wall_before_ = progress_.wall_seconds;
    start_ = Clock::now();
    TrustCurrent();
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
      if (!trained.run.diverged_on.empty() || !AllFinite(global_.current)) {
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
        if (engine_.schedule != EngineOptions::Schedule::kSync) MergeInto(&trained);
        if (!AllFinite(global_.current)) {
          RollBack(index, trained.run);
          continue;
        }
      }
      Account(trained);
      const bool finished = progress_.rows_done >= total_rows_;
      const bool due = !trained.cut_by_end && EvaluationDue(epoch_before);
      if (due) Evaluate();
      AfterSoundMegaBatch();
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
    model_->params = global_.current;
    TrainResult result = ResultOf(progress_);
    result.stopped_by_signal = stopped_by_signal_;
    result.checkpoint = checkpoint_;
    result.end_checkpoint_error = end_checkpoint_error_;
    return result;
  }

 private:
  // A mega-batch as trained so far. Whole, unless the run's end cut it (planned < mega_batch_rows):
  // then the end checkpoint keeps it open, and an extended run completes it.
  struct MegaBatchWork {
    MegaBatchRun run;
    merge::MergeOutcome merged;  // the last merge's outcome
    double merge_s = 0;          // measured time of the merges
    uint64_t merges = 0;
    uint64_t planned = 0;          // rows dealt out of the mega-batch so far
    uint64_t mega_batch_rows = 0;  // rows of the whole mega-batch
    bool cut_by_end = false;       // the run ended inside it
    bool stopped = false;          // a stop signal ended it early
    bool open() const { return mega_batch_rows > 0; }
  };

  static nlohmann::json ToJson(const MegaBatchWork& t) {
    const MegaBatchRun& r = t.run;
    return {{"updates", r.updates},       {"rows_of", r.rows_of},   {"busy_s", r.busy_s},
            {"loss_of", r.loss_of},       {"span_s", r.span_s},     {"batches", r.batches},
            {"rows", r.rows},             {"merge_s", t.merge_s},   {"merges", t.merges},
            {"planned", t.planned},       {"mega_batch_rows", t.mega_batch_rows},
            {"weights", t.merged.weights}, {"perturbed", t.merged.perturbed}};
  }

  MegaBatchWork OpenFromJson(const nlohmann::json& j) const {
    MegaBatchWork t;
    t.run = pool_.EmptyRun();
    const size_t n = pool_.size();
    auto sized = [&](const char* key, auto* out) {
      j.at(key).get_to(*out);
      if (out->size() != n) throw std::invalid_argument(std::string("open mega-batch: ") + key + " for another number of devices");
    };
    sized("updates", &t.run.updates);
    sized("rows_of", &t.run.rows_of);
    sized("busy_s", &t.run.busy_s);
    sized("loss_of", &t.run.loss_of);
    t.run.span_s = j.at("span_s").get<double>();
    t.run.batches = j.at("batches").get<uint64_t>();
    t.run.rows = j.at("rows").get<uint64_t>();
    t.merge_s = j.at("merge_s").get<double>();
    t.merges = j.at("merges").get<uint64_t>();
    t.planned = j.at("planned").get<uint64_t>();
    t.mega_batch_rows = j.at("mega_batch_rows").get<uint64_t>();
    t.merged.weights = j.at("weights").get<std::vector<double>>();
    t.merged.perturbed = j.at("perturbed").get<bool>();
    if (t.planned == 0 || t.planned >= t.mega_batch_rows || t.run.rows > t.planned)
      throw std::invalid_argument("open mega-batch: bad row counts");
    return t;
  }

  // Rows trained so far, the open mega-batch's included.
  uint64_t TrainedRows() const { return progress_.rows_done + (open_.open() ? open_.run.rows : 0); }

  // A periodic checkpoint that cannot be written (a full disk) is no reason to end a run that can
  // go on: it is reported, the last one written stays, and the next one may succeed.
  void TryWritePeriodicCheckpoint() {
    try {
      WriteCheckpoint("periodic");
    } catch (const std::exception& e) {
      ReleaseIdleMirrors();
      Event("periodic checkpoint failed at mega-batch " + std::to_string(progress_.megabatches) + " (" + e.what() +
            "); training goes on, and the last checkpoint written stays");
    }
  }

  void TryWriteEndCheckpoint() {
    // As in the single-device loop: a failed end checkpoint must not lose the trained model.
    try {
      WriteCheckpoint("end");
    } catch (const std::exception& e) {
      end_checkpoint_error_ = e.what();
    }
  }

  // The stop signal as every rank sees it: across ranks the largest any rank got, agreed between
  // mega-batches (within one, each rank's plan must go on to the same end).
  int StopSignal() const {
    const int signal = control_.stop_signal != nullptr ? control_.stop_signal->load() : 0;
    return engine_.ranks != nullptr ? AgreeOnMax(*engine_.ranks, signal) : signal;
  }
  const std::atomic<int>* StopWithinMegaBatch() const {
    return engine_.ranks != nullptr ? nullptr : control_.stop_signal;
  }

  // Across ranks, a hierarchical merge never reads the mirrors of the other ranks' replicas: they
  // take memory only on rank 0 while it writes a checkpoint (Adasum and CROSSBOW keep theirs,
  // which every merge refills; a resume or rollback touches local devices only).
  void ReleaseIdleMirrors() {
    if (engine_.ranks != nullptr && MergesByWeightedSum(engine_)) pool_.ReleaseMirrors();
  }

  void Event(const std::string& text) const {
    if (callbacks_.on_event) callbacks_.on_event(text);
  }
  double WallSeconds() const { return wall_before_ + Seconds(Clock::now() - start_); }

  void Resume() {
    const CheckpointReader reader = CheckpointReader::Open(control_.resume_dir);
    const nlohmann::json meta = ParseCheckpointMeta(reader.meta(), reader.source());
    // Other devices (another number of ranks, say): an elastic restart, as torchrun's. The run
    // goes on from the global model and the data's position with the devices it has now.
    const bool replan = OtherDevices(meta.at("run"), fingerprint_);
    CheckSameRun(meta.at("run"), fingerprint_, reader.source(),
                 replan ? DeviceDependentSettings() : std::vector<std::string>{});
    if (!meta.contains("pool")) throw data::InputError(reader.source(), 0, "not a multi-device checkpoint");
    // A mega-batch cut by a stop lives in the replicas of the devices that trained it.
    if (replan && meta.contains("open_mega_batch"))
      throw data::InputError(reader.source(), 0,
                             "this checkpoint was cut inside a mega-batch (" + DevicesOf(meta) +
                                 "); resume it with those devices, or re-plan from a checkpoint written between "
                                 "mega-batches (--checkpoint-every)");
    reader.ReadInto("global.current", global_.current.data(), global_.current.size());
    reader.ReadInto("global.previous", global_.previous.data(), global_.previous.size());
    try {
      if (replan) {
        pool_.RestoreReplanned(reader, meta.at("pool"), global_.current);
      } else {
        pool_.Restore(reader, meta.at("pool"), global_.current);
        if (ResumeLowersLr(meta.at("run"), options_.lr)) pool_.ResetLearningRates(options_.lr);
      }
      std::vector<DeviceRecord> fresh = std::move(progress_.since_eval);
      progress_ = ProgressFromJson(meta.at("progress"));
      // The old devices' records since the last evaluation go with them.
      if (replan) progress_.since_eval = std::move(fresh);
      if (meta.contains("open_mega_batch")) open_ = OpenFromJson(meta.at("open_mega_batch"));
    } catch (const nlohmann::json::exception& e) {
      throw data::InputError(reader.source(), 0, std::string("bad checkpoint state: ") + e.what());
    } catch (const std::invalid_argument& e) {
      throw data::InputError(reader.source(), 0, std::string("bad checkpoint state: ") + e.what());
    }
    CheckEpochsCoverProgress(total_rows_, TrainedRows(), rows_per_epoch_, reader.source());
    if (progress_.since_eval.size() != pool_.size())
      throw data::InputError(reader.source(), 0, "device records do not match the devices");
    if (callbacks_.on_resume) callbacks_.on_resume(progress_.evals);
    std::string how;
    if (replan) {
      how = " on other devices (" + DevicesOf(meta) + " then, " + fingerprint_.at("devices").get<std::string>() +
            " now): every device starts from the global model with the initial batch size and learning rate";
    } else if (ResumeLowersLr(meta.at("run"), options_.lr)) {
      how = " with the lower learning rate " + std::to_string(options_.lr);
    }
    Event("resumed from " + reader.source() + " at mega-batch " + std::to_string(progress_.megabatches) + how);
  }

  static std::string DevicesOf(const nlohmann::json& meta) {
    const nlohmann::json& devices = meta.at("run").value("devices", nlohmann::json("?"));
    return devices.is_string() ? devices.get<std::string>() : devices.dump();
  }

  void WriteCheckpoint(const char* why) {
    if (control_.checkpoint_dir.empty()) return;
    // A device with memory of its own (a GPU) holds its replica there: its host mirror is as old as
    // the last merge, so a checkpoint inside a mega-batch refreshes it first, or the work since
    // that merge would be lost. Across ranks rank 0 writes it, with every device's replica and
    // momentum from its owner; the other ranks send their own and hold no mirror.
    for (size_t i : pool_.alive())
      if (pool_.local(i)) pool_.device(i).PrepareMerge();
    pool_.GatherReplicas(0);
    if (engine_.ranks != nullptr && engine_.ranks->rank() != 0) {
      checkpoint_ = CheckpointPath(control_.checkpoint_dir);
      return;
    }
    progress_.wall_seconds = WallSeconds();
    nlohmann::json meta = {{"run", fingerprint_}, {"progress", ProgressToJson(progress_)}, {"pool", pool_.SaveMeta()}};
    if (open_.open()) meta["open_mega_batch"] = ToJson(open_);
    CheckpointWriter writer(meta.dump());
    writer.Add("global.current", global_.current);
    writer.Add("global.previous", global_.previous);
    std::vector<std::vector<float>> momentum;  // must outlive Write
    pool_.AddSections(&writer, &momentum);
    writer.Write(control_.checkpoint_dir);
    ReleaseIdleMirrors();
    checkpoint_ = CheckpointPath(control_.checkpoint_dir);
    Event(std::string("checkpoint (") + why + ") at mega-batch " + std::to_string(progress_.megabatches) + ": " +
          checkpoint_);
  }

  [[noreturn]] void StopWithoutDevices() {
    WriteCheckpoint("no device left");
    throw RunStopped(RunStopped::Why::kNoDevice,
                     "every device failed; the run stopped at mega-batch " + std::to_string(progress_.megabatches),
                     control_.checkpoint_dir);
  }

  // Trains mega-batch `index`, or the rest of the open one, up to the run's end, and merges it
  // unless the end cut it (the caller merges that after the end checkpoint). Sync merges every
  // round; its mega-batch only sets the evaluation cadence.
  MegaBatchWork TrainMegaBatch(uint64_t index) {
    pool_.BeginMegaBatch(index);
    rows_reported_ = TrainedRows();
    const bool continues = open_.open();
    MegaBatchWork trained = continues ? open_ : MegaBatchWork{};
    open_ = MegaBatchWork{};
    if (!continues) {
      trained.run = pool_.EmptyRun();
      trained.mega_batch_rows = MegaBatchRowsHere(pool_.MegaBatchRows(), pool_.RowsToEpochEnd());
    }
    const uint64_t left = trained.mega_batch_rows > trained.planned ? trained.mega_batch_rows - trained.planned : 0;
    const uint64_t to_end = total_rows_ - std::min(total_rows_, progress_.rows_done + trained.run.rows);
    const uint64_t budget = std::min(left, to_end);
    const std::atomic<int>* stop = StopWithinMegaBatch();
    if (engine_.schedule == EngineOptions::Schedule::kSync) {
      uint64_t dealt = 0;
      while (dealt < budget && !pool_.alive().empty()) {
        if (stop != nullptr && stop->load() != 0) {
          trained.stopped = true;
          break;
        }
        const MegaBatchRun round = pool_.RunSyncRound(to_end - dealt);
        dealt += round.rows;
        MergeAfterRound(round, &trained);
        AddRound(round, &trained.run);
      }
      trained.planned += dealt;
    } else {
      const DevicePool::Dealt dealt = pool_.RunMegaBatch(budget, to_end, continues, &trained.run, stop);
      trained.planned += dealt.rows;
      trained.stopped = dealt.stopped;
    }
    // A stop keeps the mega-batch open (it is checkpointed before its merge and goes on after a
    // resume), and so does the run's end, which the caller merges after its checkpoint.
    trained.cut_by_end = !trained.stopped && to_end < left;
    if (!trained.stopped && !trained.cut_by_end && engine_.schedule != EngineOptions::Schedule::kSync)
      MergeInto(&trained);
    return trained;
  }

  void MergeAfterRound(const MegaBatchRun& round, MegaBatchWork* trained) {
    if (pool_.alive().empty()) return;
    const Clock::time_point merge_start = Clock::now();
    trained->merged = survivor_merge_.Run(pool_, round, &global_);
    trained->merge_s += Seconds(Clock::now() - merge_start);
    ++trained->merges;
  }
  void MergeInto(MegaBatchWork* trained) { MergeAfterRound(trained->run, trained); }

  // Back to the trusted state, learning rates halved; the global momentum goes too (w_p = w), as
  // the replicas' does, since both may carry the divergence. The clock keeps the lost time, and
  // the evaluations made since stay on record (they were reported).
  void RollBack(uint64_t index, const MegaBatchRun& run) {
    const std::string what = !run.diverged_on.empty() ? run.divergence + " on " + run.diverged_on
                                                      : std::string("non-finite merged model");
    const uint32_t rollbacks = progress_.rollbacks + 1;  // the whole run's, in the metrics
    // --max-rollbacks bounds what this process tries. The checkpoint's count is left out: a run
    // resumed after a divergence stop (with a lower --lr, as the stop advises) would otherwise
    // stop at its first divergence, "after N rollbacks" none of which it made.
    ++rollbacks_here_;
    const double spent = progress_.train_seconds + run.span_s;
    std::vector<EvalRecord> evals = std::move(progress_.evals);
    global_.current = trusted_->global;
    global_.previous = trusted_->global;
    progress_ = trusted_->progress;
    progress_.rollbacks = rollbacks;
    progress_.train_seconds = spent;
    progress_.evals = std::move(evals);
    // An open mega-batch's rows stay dealt out, but what the replicas learnt from them is gone
    // with the replicas: its merge weighs only what they train from here.
    open_ = trusted_->open;
    if (open_.open()) {
      const uint64_t planned = open_.planned, rows = open_.mega_batch_rows;
      open_ = MegaBatchWork{};
      open_.run = pool_.EmptyRun();
      open_.planned = planned;
      open_.mega_batch_rows = rows;
    }
    pool_.RollBack(trusted_->pool, global_.current);
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
    TrustCurrent();
  }

  // A state is trusted once the mega-batch after it was sound: a divergence is seen only when a
  // loss crosses the limit, and the mega-batch before may already have merged steps on the way up
  // into a finite model. The state where the run starts (or resumes) is trusted as it is.
  struct SavedState {
    DevicePool::Snapshot pool;
    std::vector<float> global;  // w; w_p is not kept: a rollback clears the momentum
    RunProgress progress;
    MegaBatchWork open;
  };
  SavedState Capture() const { return SavedState{pool_.TakeSnapshot(), global_.current, progress_, open_}; }
  void TrustCurrent() {
    latest_ = Capture();
    trusted_ = latest_;
  }
  void AfterSoundMegaBatch() {
    trusted_ = std::move(latest_);
    latest_ = Capture();
  }

  // Counters, clocks, per-device records and Algorithm 1 after a good mega-batch.
  void Account(const MegaBatchWork& trained) {
    const MegaBatchRun& run = trained.run;
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
    if (engine_.clock == EngineOptions::Clock::kWall) {
      progress_.train_seconds += run.span_s + trained.merge_s;
    } else if (trained.merges > 0) {
      const double units = double(global_.current.size()) * double(alive.size());
      if (progress_.merge_cost_s == 0) {
        progress_.merge_cost_s =
            engine_.merge_cost_s > 0 ? engine_.merge_cost_s : trained.merge_s / double(trained.merges) / units;
        // Measured, it differs from rank to rank; rank 0's holds for all.
        if (engine_.ranks != nullptr) progress_.merge_cost_s = FromRank(*engine_.ranks, progress_.merge_cost_s, 0);
      }
      progress_.train_seconds += run.span_s + double(trained.merges) * units * progress_.merge_cost_s;
    }
    for (size_t i = 0; i < pool_.size(); ++i) {
      DeviceRecord& d = progress_.since_eval[i];
      d.batch = RowsForBatch(pool_.states()[i].batch);
      d.lr = pool_.states()[i].lr;
      d.updates += run.updates[i];
      d.rows += run.rows_of[i];
      d.weight = trained.merged.weights.empty() ? 0.0 : trained.merged.weights[i];
      d.busy_s += run.busy_s[i];
      if (!pool_.dropped(i)) d.idle_s += std::max(0.0, run.span_s - run.busy_s[i]);
      d.dropped = pool_.dropped(i);
      d.fault = pool_.fault(i);
    }
    if (engine_.scale_batches && engine_.schedule == EngineOptions::Schedule::kDynamic) {
      // Algorithm 1 over the devices still alive (a dropped one's zero updates would skew the mean).
      std::vector<uint64_t> updates;
      std::vector<BatchSizeAndLr> states;
      for (size_t i : alive) updates.push_back(run.updates[i]), states.push_back(pool_.states()[i]);
      ScaleBatchSizes(updates, pool_.bounds(), &states);
      for (size_t k = 0; k < alive.size(); ++k) pool_.states()[alive[k]] = states[k];
    }
  }

  // On the schedule; the run's end adds its own evaluation (Train).
  bool EvaluationDue(uint64_t epoch_before) const {
    switch (options_.eval.kind) {
      case EvalSchedule::Kind::kEachEpoch: return progress_.rows_done / rows_per_epoch_ > epoch_before;
      case EvalSchedule::Kind::kEnd: return false;
      case EvalSchedule::Kind::kEveryMegaBatches: return progress_.megabatches % options_.eval.mega_batches == 0;
    }
    return false;
  }

  void Evaluate() {
    EvalRecord record;
    const Clock::time_point eval_start = Clock::now();
    model_->params = global_.current;
    if (test_ != nullptr) {
      const bool whole = progress_.rows_done >= total_rows_ && options_.final_eval_full;
      const std::vector<size_t> alive_before = pool_.alive();
      record.test = pool_.Evaluate(*model_, *test_, whole ? all_test_rows_ : eval_rows_);
      for (size_t i : alive_before)
        if (pool_.dropped(i))
          Event("device " + pool_.device(i).spec().id + " dropped in the evaluation after mega-batch " +
                std::to_string(progress_.megabatches) + " (" + pool_.fault(i) + "); the evaluation was scored on the " +
                std::to_string(pool_.alive().size()) + " devices left, which go on");
      for (size_t i = 0; i < pool_.size(); ++i) {
        progress_.since_eval[i].dropped = pool_.dropped(i);
        progress_.since_eval[i].fault = pool_.fault(i);
      }
    }
    record.eval_time_s = Seconds(Clock::now() - eval_start);
    record.megabatch = progress_.megabatches;
    record.epoch = double(progress_.rows_done) / double(rows_per_epoch_);
    record.train_time_s = progress_.train_seconds;
    record.wall_time_s = WallSeconds();
    record.train_samples = progress_.rows_done;
    record.train_loss = progress_.loss_batches > 0 ? progress_.loss_sum / double(progress_.loss_batches) : 0.0;
    record.perturbed = progress_.last_perturbed;
    record.rollbacks = progress_.rollbacks;
    record.devices = progress_.since_eval;
    for (DeviceRecord& d : progress_.since_eval) d.updates = d.rows = 0, d.busy_s = d.idle_s = 0;
    progress_.loss_sum = 0;
    progress_.loss_batches = 0;
    progress_.evals.push_back(record);
    if (callbacks_.on_eval) callbacks_.on_eval(record);
  }

  const data::Dataset* test_;
  const TrainOptions& options_;
  const EngineOptions& engine_;
  kernels::Model<float>* model_;
  const TrainCallbacks& callbacks_;
  const RunControl& control_;
  DevicePool pool_;
  merge::GlobalModel global_;
  const nlohmann::json fingerprint_;
  SurvivorMerge survivor_merge_;
  const uint64_t rows_per_epoch_, total_rows_;
  const std::vector<uint64_t> eval_rows_, all_test_rows_;  // --eval-rows' sample; the whole test set
  RunProgress progress_;
  MegaBatchWork open_;  // the mega-batch the run's end cut, kept open (none: !open())
  std::optional<SavedState> trusted_, latest_;  // the rollback target; the state to trust next
  Clock::time_point start_;
  uint64_t rows_reported_ = 0;  // rows trained as the per-batch progress reports them
  double wall_before_ = 0;
  int stopped_by_signal_ = 0;
  uint32_t rollbacks_here_ = 0;  // rollbacks since this process started or resumed the run
  std::string checkpoint_;
  std::string end_checkpoint_error_;  // why the end checkpoint failed, if it did
};

}  // namespace

TrainResult RunMultiDevice(const data::Dataset& train, const data::Dataset* test,
                           const TrainOptions& options, const EngineOptions& engine,
                           kernels::Model<float>* model, const TrainCallbacks& callbacks,
                           const RunControl& control) {
  ValidateTrainOptions(options);
  ValidateEngineOptions(engine);
  return MultiDeviceRun(train, test, options, engine, model, callbacks, control).Train();
}

}  // namespace xmlt::scheduler
