// The multi-device training loop; see heterogeneous_trainer.h.
#include "scheduler/heterogeneous_trainer.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <numeric>
#include <stdexcept>

#include "engine/device_spec.h"
#include "engine/evaluator.h"
#include "engine/heterogeneity.h"
#include "engine/worker.h"
#include "merge/merger.h"
#include "scheduler/batch_size_scaling.h"
#include "scheduler/epoch_sampler.h"

namespace xmlt::scheduler {
namespace {

using Clock = std::chrono::steady_clock;
double Seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

// One batch of a mega-batch: which device runs it and where its rows are in the row arena.
struct Assignment {
  size_t device = 0;
  size_t offset = 0, count = 0;
  double slowdown = 1;
};

// What the devices did in one mega-batch.
struct MegaBatchRun {
  std::vector<uint64_t> updates;  // u_i
  std::vector<uint64_t> rows_of;  // rows per device
  std::vector<double> busy_s;     // per device
  double span_s = 0;              // the mega-batch's duration (the slowest device)
  std::vector<double> loss_of;    // per device: sum of its batches' mean losses, in its order
  uint64_t batches = 0, rows = 0;
};

class Engine {
 public:
  Engine(const data::Dataset& train, const TrainOptions& options, const EngineOptions& engine,
         const kernels::Model<float>& initial)
      : options_(options), engine_(engine), sampler_(train, options.seed) {
    const std::vector<engine::DeviceSpec> specs = engine::ParseDeviceList(engine.devices);
    const size_t n = specs.size();
    engine::HeterogeneitySpec hetero = engine::ParseHetero(engine.hetero);
    if (!engine.speed.empty()) hetero.speed = engine::ParseSpeeds(engine.speed);
    if (!hetero.speed.empty() && hetero.speed.size() != n)
      throw std::invalid_argument("--speed has " + std::to_string(hetero.speed.size()) + " values for " +
                                  std::to_string(n) + " devices");
    slowdown_ = std::make_unique<engine::SlowdownModel>(hetero, n, options.seed);
    bounds_ = MakeBounds(options.batch, engine.batch_min, engine.beta);
    const engine::DeviceLimits limits = engine::LimitsFor(train, options.batch);
    for (size_t i = 0; i < n; ++i) {
      workers_.push_back(std::make_unique<engine::Worker>(
          i, engine::MakeDevice(specs[i], initial, limits, options.local_momentum), &train, &results_));
      states_.push_back({double(options.batch), double(options.lr)});
    }
    arena_.resize(MegaBatchRows());
  }

  // Rows in a full mega-batch: M batches of b_max rows; under static dispatch every device gets
  // the same number of batches, ceil(M / n), so the mega-batch is rounded up to a multiple of n.
  uint64_t MegaBatchRows() const {
    const uint64_t n = workers_.size();
    const uint64_t batches = engine_.schedule == EngineOptions::Schedule::kStatic
                                 ? (options_.mega_batch + n - 1) / n * n
                                 : options_.mega_batch;
    return batches * options_.batch;
  }

  size_t num_devices() const { return workers_.size(); }
  const std::vector<DeviceBatch>& states() const { return states_; }
  uint64_t rows_per_epoch() const { return sampler_.rows_per_epoch(); }
  engine::Device& device(size_t i) { return workers_[i]->device(); }
  std::vector<DeviceBatch>& mutable_states() { return states_; }
  const BatchScalingBounds& bounds() const { return bounds_; }

  MegaBatchRun EmptyRun() const {
    MegaBatchRun run;
    run.updates.assign(num_devices(), 0);
    run.rows_of.assign(num_devices(), 0);
    run.loss_of.assign(num_devices(), 0.0);
    run.busy_s.assign(num_devices(), 0.0);
    return run;
  }

  // Synchronous round: one global batch of --batch rows (fewer at an epoch's end or the run's)
  // split evenly over the devices, all starting from the same model.
  MegaBatchRun RunSyncRound(uint64_t budget) {
    const size_t n = num_devices();
    const size_t taken = sampler_.Take(std::min<uint64_t>(options_.batch, budget), arena_.data());
    std::vector<Assignment> plan;
    size_t offset = 0;
    for (size_t i = 0; i < n; ++i) {
      const size_t count = taken / n + (i < taken % n ? 1 : 0);
      if (count == 0) continue;  // fewer rows than devices: the others sit this round out
      plan.push_back(Assignment{i, offset, count, slowdown_->NextFactor(i)});
      offset += count;
    }
    return RunPlanned(plan);
  }

  // Trains one mega-batch of at most `budget` rows (dynamic or static dispatch).
  MegaBatchRun RunMegaBatch(uint64_t budget) {
    const bool wall = engine_.clock == EngineOptions::Clock::kWall;
    if (engine_.schedule == EngineOptions::Schedule::kDynamic && wall) return RunDynamicWall(budget);
    return RunPlanned(engine_.schedule == EngineOptions::Schedule::kDynamic ? PlanDynamic(budget)
                                                                             : PlanStatic(budget));
  }

 private:
  // Virtual clock: the batch goes to the device whose simulated clock is earliest (ties to the
  // lower index); its clock advances by rows x slowdown. The plan depends only on the seed.
  std::vector<Assignment> PlanDynamic(uint64_t budget) {
    std::vector<Assignment> plan;
    std::vector<double> clock(num_devices(), 0.0);
    size_t used = 0;
    while (budget > 0) {
      const size_t i = size_t(std::min_element(clock.begin(), clock.end()) - clock.begin());
      const size_t want = std::min<uint64_t>(RowsForBatch(states_[i].batch), budget);
      Assignment a{i, used, sampler_.Take(want, arena_.data() + used), slowdown_->NextFactor(i)};
      clock[i] += double(a.count) * a.slowdown;
      used += a.count;
      budget -= a.count;
      plan.push_back(a);
    }
    return plan;
  }

  // Elastic SGD: the mega-batch's batches of b_max rows dealt round robin, ceil(M / n) per
  // device, whatever the devices' speeds.
  std::vector<Assignment> PlanStatic(uint64_t budget) {
    std::vector<Assignment> plan;
    const size_t n = num_devices();
    const size_t per_device = (options_.mega_batch + n - 1) / n;
    size_t used = 0;
    for (size_t round = 0; round < per_device && budget > 0; ++round) {
      for (size_t i = 0; i < n && budget > 0; ++i) {
        const size_t want = std::min<uint64_t>(options_.batch, budget);
        Assignment a{i, used, sampler_.Take(want, arena_.data() + used), slowdown_->NextFactor(i)};
        used += a.count;
        budget -= a.count;
        plan.push_back(a);
      }
    }
    return plan;
  }

  engine::BatchTask TaskFor(const Assignment& a, bool wall) const {
    engine::BatchTask task;
    task.rows = arena_.data() + a.offset;
    task.count = a.count;
    task.lr = float(states_[a.device].lr);
    task.slowdown = a.slowdown;
    task.emulate_wait = wall;
    return task;
  }

  // Submits a whole plan, waits for every result; times come from the virtual clock (rows x
  // slowdown x row cost) or, for a static plan on the wall clock, from the workers' real times.
  MegaBatchRun RunPlanned(const std::vector<Assignment>& plan) {
    const bool wall = engine_.clock == EngineOptions::Clock::kWall;
    MegaBatchRun run = EmptyRun();
    std::vector<double> units(num_devices(), 0.0);
    const Clock::time_point start = Clock::now();
    for (const Assignment& a : plan) {
      workers_[a.device]->Submit(TaskFor(a, wall));
      ++run.updates[a.device];
      units[a.device] += double(a.count) * a.slowdown;
    }
    double compute_s = 0;
    Collect(plan.size(), &run, &compute_s);
    if (wall) {
      run.span_s = Seconds(Clock::now() - start);
    } else {
      // The row cost is calibrated once, on the first mega-batch, unless it was given.
      if (row_cost_s_ == 0) row_cost_s_ = engine_.row_cost_s > 0 ? engine_.row_cost_s : compute_s / double(run.rows);
      for (size_t i = 0; i < num_devices(); ++i) run.busy_s[i] = units[i] * row_cost_s_;
      run.span_s = *std::max_element(run.busy_s.begin(), run.busy_s.end());
    }
    return run;
  }

  // Wall clock, dynamic: every device starts with a batch; each result frees its device for the
  // next one, so faster devices take more batches.
  MegaBatchRun RunDynamicWall(uint64_t budget) {
    MegaBatchRun run = EmptyRun();
    const Clock::time_point start = Clock::now();
    size_t used = 0, outstanding = 0;
    auto dispatch = [&](size_t i) {
      const size_t want = std::min<uint64_t>(RowsForBatch(states_[i].batch), budget);
      Assignment a{i, used, sampler_.Take(want, arena_.data() + used), slowdown_->NextFactor(i)};
      used += a.count;
      budget -= a.count;
      workers_[i]->Submit(TaskFor(a, true));
      ++run.updates[i];
      ++outstanding;
    };
    for (size_t i = 0; i < num_devices() && budget > 0; ++i) dispatch(i);
    std::exception_ptr error;
    while (outstanding > 0) {
      engine::BatchResult result;
      results_.pop(result);
      --outstanding;
      if (!Account(result, &run, nullptr, &error) && budget > 0 && !error) dispatch(result.device);
    }
    if (error) std::rethrow_exception(error);
    run.span_s = Seconds(Clock::now() - start);
    return run;
  }


  // Waits for `count` results; the first failure is rethrown once every batch is back, so no
  // worker still reads rows that the next mega-batch overwrites.
  void Collect(size_t count, MegaBatchRun* run, double* compute_s) {
    std::exception_ptr error;
    for (size_t k = 0; k < count; ++k) {
      engine::BatchResult result;
      results_.pop(result);
      Account(result, run, compute_s, &error);
    }
    if (error) std::rethrow_exception(error);
  }

  // Adds a result to the run; returns true when it carried an error (kept in *error).
  bool Account(const engine::BatchResult& result, MegaBatchRun* run, double* compute_s,
               std::exception_ptr* error) {
    if (result.error) {
      if (!*error) *error = result.error;
      return true;
    }
    if (!std::isfinite(result.loss_sum)) {
      if (!*error)
        *error = std::make_exception_ptr(std::runtime_error(
            "training diverged on " + workers_[result.device]->device().spec().id +
            " (non-finite loss); lower --lr"));
      return true;
    }
    // Per device: a worker's results arrive in its own order, whatever the other workers do.
    run->loss_of[result.device] += result.loss_sum / std::max<uint32_t>(result.labeled_rows, 1);
    run->busy_s[result.device] += result.busy_s;
    run->rows += result.count;
    run->rows_of[result.device] += result.count;
    ++run->batches;
    if (compute_s != nullptr) *compute_s += result.compute_s;
    return false;
  }

  const TrainOptions& options_;
  const EngineOptions& engine_;
  EpochSampler sampler_;
  std::unique_ptr<engine::SlowdownModel> slowdown_;
  BatchScalingBounds bounds_;
  engine::ResultQueue results_;
  std::vector<std::unique_ptr<engine::Worker>> workers_;
  std::vector<DeviceBatch> states_;
  std::vector<uint64_t> arena_;  // the rows of the current mega-batch, allocated once
  double row_cost_s_ = 0;
};

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
}

}  // namespace

TrainResult TrainOnDevices(const data::Dataset& train, const data::Dataset* test,
                           const TrainOptions& options, const EngineOptions& engine,
                           kernels::Model<float>* model, const TrainCallbacks& callbacks) {
  ValidateTrainOptions(options);
  ValidateEngineOptions(engine);
  Engine devices(train, options, engine, *model);
  const size_t n = devices.num_devices();
  const std::unique_ptr<merge::Merger> merger = MakeMerger(engine, n);
  merge::GlobalModel global{model->params, model->params};
  const uint64_t rows_per_epoch = devices.rows_per_epoch();
  const uint64_t total_rows = TotalTrainingRows(options, rows_per_epoch, train.source);
  const uint64_t mega_rows = devices.MegaBatchRows();

  merge::ReplicaSet replicas;
  replicas.size = model->params.size();
  for (const kernels::LayerView& layer : model->layers) {
    replicas.tensors.push_back(layer.weight.offset);
    replicas.tensors.push_back(layer.bias.offset);
  }
  for (size_t i = 0; i < n; ++i) replicas.params.push_back(devices.device(i).HostParams());

  TrainResult result;
  std::vector<DeviceRecord> since_eval(n);
  for (size_t i = 0; i < n; ++i) since_eval[i].id = devices.device(i).spec().id;
  double train_seconds = 0, loss_sum = 0, merge_cost_s = 0;
  uint64_t loss_batches = 0, rows_done = 0, megabatches = 0;
  const Clock::time_point start = Clock::now();

  while (rows_done < total_rows) {
    const uint64_t epoch_before = rows_done / rows_per_epoch;
    const uint64_t budget = std::min(mega_rows, total_rows - rows_done);
    double merge_s = 0;
    uint64_t merges = 0;
    merge::MergeOutcome merged;
    auto merge_after = [&](const MegaBatchRun& part) {
      const Clock::time_point merge_start = Clock::now();
      merge::MergeInput input;
      for (const DeviceBatch& state : devices.states()) {
        input.batch.push_back(state.batch);
        input.lr.push_back(state.lr);
      }
      input.updates = part.updates;
      for (size_t i = 0; i < n; ++i) devices.device(i).PrepareMerge();
      merged = merger->Merge(replicas, input, &global);
      for (size_t i = 0; i < n; ++i) devices.device(i).FinishMerge();
      merge_s += Seconds(Clock::now() - merge_start);
      ++merges;
    };
    MegaBatchRun run;
    if (engine.schedule == EngineOptions::Schedule::kSync) {
      // Merged after every round; the mega-batch only sets the evaluation cadence.
      run = devices.EmptyRun();
      for (uint64_t left = budget; left > 0;) {
        const MegaBatchRun round = devices.RunSyncRound(left);
        left -= round.rows;
        merge_after(round);
        Absorb(round, &run);
      }
    } else {
      run = devices.RunMegaBatch(budget);
      merge_after(run);
    }
    rows_done += run.rows;
    ++megabatches;
    result.batches += run.batches;
    for (double device_loss : run.loss_of) loss_sum += device_loss;
    loss_batches += run.batches;

    // Merges cost time too: measured on the wall clock; on the virtual clock a cost per parameter
    // and replica (given, or calibrated on the first merge), so that algorithms merging every
    // step (sync, crossbow) pay for it deterministically.
    if (engine.clock == EngineOptions::Clock::kWall) {
      train_seconds += run.span_s + merge_s;
    } else {
      const double units = double(replicas.size) * double(n);
      if (merge_cost_s == 0) merge_cost_s = engine.merge_cost_s > 0 ? engine.merge_cost_s : merge_s / merges / units;
      train_seconds += run.span_s + double(merges) * units * merge_cost_s;
    }
    for (size_t i = 0; i < n; ++i) {
      DeviceRecord& d = since_eval[i];
      d.batch = RowsForBatch(devices.states()[i].batch);
      d.lr = devices.states()[i].lr;
      d.updates += run.updates[i];
      d.rows += run.rows_of[i];
      d.weight = merged.weights[i];
      d.busy_s += run.busy_s[i];
      d.idle_s += std::max(0.0, run.span_s - run.busy_s[i]);
    }
    if (engine.scale_batches && engine.schedule == EngineOptions::Schedule::kDynamic) ScaleBatchSizes(run.updates, devices.bounds(), &devices.mutable_states());

    const bool finished = rows_done >= total_rows;
    bool due = finished;
    switch (options.eval.kind) {
      case EvalSchedule::Kind::kEachEpoch: due = due || rows_done / rows_per_epoch > epoch_before; break;
      case EvalSchedule::Kind::kEnd: break;
      case EvalSchedule::Kind::kEveryMegaBatches: due = due || megabatches % options.eval.mega_batches == 0; break;
    }
    if (!due) continue;
    EvalRecord record;
    const Clock::time_point eval_start = Clock::now();
    model->params = global.current;
    if (test != nullptr) record.test = engine::Evaluate(*model, *test);
    record.eval_time_s = Seconds(Clock::now() - eval_start);
    record.megabatch = megabatches;
    record.epoch = double(rows_done) / double(rows_per_epoch);
    record.train_time_s = train_seconds;
    record.wall_time_s = Seconds(Clock::now() - start);
    record.train_samples = rows_done;
    record.train_loss = loss_batches > 0 ? loss_sum / double(loss_batches) : 0.0;
    record.perturbed = merged.perturbed;
    record.devices = since_eval;
    for (DeviceRecord& d : since_eval) d.updates = d.rows = 0, d.busy_s = d.idle_s = 0;
    loss_sum = 0;
    loss_batches = 0;
    result.last = record;
    if (result.best.train_samples == 0 || record.test.metrics.p1 > result.best.test.metrics.p1)
      result.best = record;
    if (callbacks.on_eval) callbacks.on_eval(record);
    if (callbacks.on_progress) callbacks.on_progress(rows_done, total_rows, record.train_loss);
  }
  model->params = global.current;
  return result;
}

}  // namespace xmlt::scheduler
