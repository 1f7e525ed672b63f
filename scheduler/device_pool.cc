// The devices of a multi-device run; see device_pool.h.
#include "scheduler/device_pool.h"

#include <algorithm>

#include "engine/device_spec.h"
#include "engine/remote_device.h"
#include "scheduler/rank_exchange.h"
#include "scheduler/settlement.h"

namespace xmlt::scheduler {
namespace {

using Clock = std::chrono::steady_clock;
double Seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

// The engine's options checked first: the planner's slowdown model would refuse them less clearly.
DispatchPlanner MakePlanner(const TrainOptions& options, const EngineOptions& engine) {
  ValidateEngineOptions(engine);
  return DispatchPlanner(engine.schedule, options.mega_batch,
                         engine::SlowdownModel(engine.heterogeneity, engine.devices.size(), options.seed));
}

}  // namespace

DevicePool::DevicePool(const data::Dataset& train, const TrainOptions& options, const EngineOptions& engine,
                       const kernels::Model<float>& initial, std::vector<FaultInjection> faults)
    : options_(options), loss_watch_(options.divergence_factor), engine_(engine), rows_(train, options.seed),
      planner_(MakePlanner(options, engine)), faults_(std::move(faults), engine.devices.size()) {
  const std::vector<engine::DeviceSpec>& specs = engine.devices;
  const size_t n = specs.size();
  bounds_ = MakeBounds(options.batch, engine.batch_min, engine.beta);
  const engine::DeviceLimits limits = engine::LimitsFor(train, options.batch);
  device_rank_ = engine.device_rank.empty() ? std::vector<int>(n, 0) : engine.device_rank;
  for (size_t i = 0; i < n; ++i) {
    // Another rank's device is a mirror here: its owner trains it.
    std::unique_ptr<engine::Device> device =
        local(i) ? engine::MakeDevice(specs[i], initial, limits, options.local_momentum, options.math)
                 : engine::MakeRemoteDevice(specs[i], initial);
    workers_.push_back(std::make_unique<engine::Worker>(i, std::move(device), &train, &results_));
    states_.push_back({double(options.batch), double(options.lr)});
  }
  fault_.assign(n, "");
  rows_.SizeArena(ArenaRows(options.mega_batch, options.batch, n));
}

std::vector<size_t> DevicePool::alive() const {
  std::vector<size_t> result;
  for (size_t i = 0; i < size(); ++i)
    if (!dropped(i)) result.push_back(i);
  return result;
}

std::vector<engine::Device*> DevicePool::DevicesAt(const std::vector<size_t>& ids) {
  std::vector<engine::Device*> devices;
  for (size_t i : ids) devices.push_back(&device(i));
  return devices;
}

// M batches of b_max rows; under static dispatch every device gets the same number of batches,
// ceil(M / n), so the mega-batch is rounded up to a multiple of n.
uint64_t DevicePool::MegaBatchRows() const {
  const uint64_t n = std::max<size_t>(alive().size(), 1);
  const uint64_t batches = engine_.schedule == EngineOptions::Schedule::kStatic
                               ? (options_.mega_batch + n - 1) / n * n
                               : options_.mega_batch;
  return batches * options_.batch;
}

MegaBatchRun DevicePool::EmptyRun() const {
  MegaBatchRun run;
  run.updates.assign(size(), 0);
  run.rows_of.assign(size(), 0);
  run.loss_of.assign(size(), 0.0);
  run.busy_s.assign(size(), 0.0);
  return run;
}

Assignment DevicePool::Assign(size_t device, size_t want, size_t* used, uint64_t* cap) {
  rows_.CheckFits(*used, want);
  Assignment a{device, *used, rows_.Take(std::min<uint64_t>(want, *cap), *used), planner_.DrawSlowdown(device)};
  *used += a.count;
  *cap -= a.count;
  return a;
}

engine::BatchTask DevicePool::TaskFor(const Assignment& a, uint64_t id) {
  engine::BatchTask task;
  task.rows = rows_.arena(a.offset);
  task.count = a.count;
  task.lr = float(states_[a.device].lr);
  task.slowdown = a.slowdown;
  task.emulate_wait = engine_.clock == EngineOptions::Clock::kWall;
  task.id = id;
  faults_.Arm(a.device, &task);
  return task;
}

engine::BatchResult DevicePool::Collect() {
  engine::BatchResult result;
  results_.pop(result);
  if (on_batch_) on_batch_(result);
  return result;
}

void DevicePool::ShareResults(const std::vector<Assignment>& plan, std::vector<engine::BatchResult>* results) {
  if (engine_.ranks == nullptr) return;
  std::vector<size_t> devices;
  for (const Assignment& a : plan) devices.push_back(a.device);
  ShareBatchResults(*engine_.ranks, device_rank_, devices, results);
}

void DevicePool::Conclude(const std::vector<Assignment>& plan, const std::vector<engine::BatchResult>& results,
                          std::chrono::steady_clock::time_point start, MegaBatchRun* run) {
  const uint64_t rows_before = run->rows;
  Settle(*this, plan, results, run);
  if (engine_.clock == EngineOptions::Clock::kWall) {
    // Across ranks, the slowest rank's time: every rank books the same.
    const double span = Seconds(Clock::now() - start);
    run->span_s += engine_.ranks != nullptr ? AgreeOnMax(*engine_.ranks, span) : span;
  } else {
    TimeOnTheVirtualClock(plan, results, rows_before, run);
  }
}

// Virtual clock: a device is busy for its rows x slowdown x the row cost, the mega-batch (or round)
// for as long as its busiest device.
void DevicePool::TimeOnTheVirtualClock(const std::vector<Assignment>& plan,
                                       const std::vector<engine::BatchResult>& results, uint64_t rows_before,
                                       MegaBatchRun* run) {
  double compute_s = 0;
  for (size_t k = 0; k < plan.size(); ++k) {
    if (dropped(plan[k].device)) continue;
    compute_s += results[k].compute_s;
    planner_.AddWork(plan[k].device, plan[k].count, plan[k].slowdown);
  }
  // The row cost is calibrated once, on the first mega-batch with work done, unless it was given.
  if (row_cost_s_ == 0 && run->rows > rows_before)
    row_cost_s_ = engine_.row_cost_s > 0 ? engine_.row_cost_s : compute_s / double(run->rows - rows_before);
  for (size_t i = 0; i < size(); ++i) run->busy_s[i] = planner_.Work(i) * row_cost_s_;
  run->span_s = *std::max_element(run->busy_s.begin(), run->busy_s.end());
}

}  // namespace xmlt::scheduler
