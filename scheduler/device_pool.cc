// The devices of a multi-device run; see device_pool.h.
#include "scheduler/device_pool.h"

#include <algorithm>
#include <stdexcept>
#include <string>

#include "engine/device_spec.h"
#include "engine/remote_device.h"
#include "scheduler/rank_exchange.h"

namespace xmlt::scheduler {
namespace {

// The engine's options checked first: the planner's slowdown model would refuse them less clearly.
DispatchPlanner MakePlanner(const TrainOptions& options, const SchedulerOptions& scheduling) {
  ValidateSchedulerOptions(scheduling);
  ValidateBf16Weights(options, scheduling);
  return DispatchPlanner(scheduling.schedule, options.mega_batch,
                         engine::SlowdownModel(scheduling.heterogeneity, scheduling.devices.size(), options.seed));
}

}  // namespace

DevicePool::DevicePool(const data::Dataset& train, const TrainOptions& options, const SchedulerOptions& scheduling,
                       const kernels::Model<float>& initial, std::vector<FaultInjection> faults,
                       ranks::RankGroup* ranks)
    : options_(options), loss_watch_(options.divergence_factor), scheduling_(scheduling), ranks_(ranks),
      rows_(train, options.seed),
      planner_(MakePlanner(options, scheduling)), faults_(std::move(faults), scheduling.devices.size()) {
  const std::vector<engine::DeviceSpec>& specs = scheduling.devices;
  const size_t n = specs.size();
  bounds_ = MakeBounds(options.batch, scheduling.batch_min, scheduling.beta);
  const engine::DeviceLimits limits = engine::LimitsFor(train, options.batch);
  // The group and the owners must tell of the same ranks: a device no rank owns would never train.
  if (ranks != nullptr && (scheduling.device_rank.empty() || ranks->size() != RankCount(scheduling)))
    throw std::invalid_argument("a run across " + std::to_string(ranks->size()) + " ranks whose devices name " +
                                std::to_string(scheduling.device_rank.empty() ? 0 : RankCount(scheduling)) +
                                " owning ranks");
  device_rank_ = scheduling.device_rank.empty() ? std::vector<int>(n, 0) : scheduling.device_rank;
  for (size_t i = 0; i < n; ++i) {
    // A sampled CPU device steps with plain SGD (a momentum buffer would touch every output row);
    // the other devices keep the local momentum. It takes heavy ball's long-run step instead,
    // lr / (1 - momentum), so that between merges its replica moves as far as the others' (two
    // on Bibtex, 5 epochs: P@1 0.06 without it, 0.42 to 0.45 with it, dense 0.39 to 0.41).
    const bool sampled = specs[i].kind == engine::DeviceKind::kCpu && scheduling.sampled_output.enabled;
    const float momentum = sampled ? 0.0f : options.local_momentum;
    step_scale_.push_back(sampled ? 1.0 / (1.0 - double(options.local_momentum)) : 1.0);
    // Another rank's device is a mirror here: its owner trains it. Adagrad's rate is a step size
    // per coordinate, not a share of the gradient: the sampled device's larger rate leaves it alone.
    const float input_adagrad_ratio =
        options.input_lr > 0 ? float(double(options.input_lr) / options.lr / step_scale_.back()) : 0.0f;
    engine::StepSettings step_settings{options.weight_decay, options.dropout, options.seed, i,
                                       input_adagrad_ratio};
    // The dense step keeps a bf16 state, on a CPU or a GPU; the sampled step keeps its in fp32.
    step_settings.bf16_optimizer_state = options.bf16_optimizer_state && !sampled;
    step_settings.bf16_weights = options.bf16_weights;  // ValidateBf16Weights: the dense step, merged on the host
    std::unique_ptr<engine::Device> device =
        local(i) ? engine::MakeDevice(specs[i], initial, limits, momentum, options.math, scheduling.sampled_output,
                                      step_settings)
                 : engine::MakeRemoteDevice(specs[i], initial, options.bf16_weights);
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
  const uint64_t batches = scheduling_.schedule == SchedulerOptions::Schedule::kStatic
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
  if (want > a.count) a.rate_share = double(a.count) / double(want);
  *used += a.count;
  *cap -= a.count;
  return a;
}

engine::BatchTask DevicePool::TaskFor(const Assignment& a, uint64_t id) {
  engine::BatchTask task;
  task.rows = rows_.arena(a.offset);
  task.count = a.count;
  // At the full rate, Bibtex's epoch-end batch of 16 rows (of 128) cost one device up to 0.09 of P@1.
  task.lr = float(states_[a.device].lr * lr_scale_ * step_scale_[a.device] * a.rate_share);
  task.slowdown = a.slowdown;
  task.emulate_wait = scheduling_.clock == SchedulerOptions::Clock::kWall;
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
  if (ranks_ == nullptr) return;
  std::vector<size_t> devices;
  for (const Assignment& a : plan) devices.push_back(a.device);
  ShareBatchResults(*ranks_, device_rank_, devices, results);
}

}  // namespace xmlt::scheduler
