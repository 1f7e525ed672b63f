// The devices of a multi-device run; see device_pool.h.
#include "scheduler/device_pool.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <future>
#include <numeric>
#include <stdexcept>

#include "data/input_error.h"
#include "engine/device_spec.h"
#include "engine/remote_device.h"
#include "kernels/context_lost.h"
#include "scheduler/rank_exchange.h"

namespace xmlt::scheduler {
namespace {

using Clock = std::chrono::steady_clock;
double Seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

std::string Describe(const std::exception_ptr& error) {
  try {
    std::rethrow_exception(error);
  } catch (const std::exception& e) {
    // Never empty: an empty fault text would read as a healthy device.
    return *e.what() != 0 ? e.what() : "error without a message";
  } catch (...) {
    return "unknown error";
  }
}

// The engine's options checked first: the planner's slowdown model would refuse them less clearly.
DispatchPlanner MakePlanner(const TrainOptions& options, const EngineOptions& engine) {
  ValidateEngineOptions(engine);
  return DispatchPlanner(engine.schedule, options.mega_batch,
                         engine::SlowdownModel(engine.heterogeneity, engine.devices.size(), options.seed));
}

}  // namespace

DevicePool::DevicePool(const data::Dataset& train, const TrainOptions& options, const EngineOptions& engine,
                       const kernels::Model<float>& initial, std::vector<FaultInjection> faults)
    : options_(options), loss_watch_(options.divergence_factor), engine_(engine), sampler_(train, options.seed),
      planner_(MakePlanner(options, engine)), pending_(std::move(faults)) {
  const std::vector<engine::DeviceSpec>& specs = engine.devices;
  const size_t n = specs.size();
  for (const FaultInjection& fault : pending_)
    if (fault.device >= n)
      throw OptionError("inject_fault", "device " + std::to_string(fault.device) + " does not exist (" +
                                            std::to_string(n) + " devices)");
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
  rows_per_s_.assign(n, 0.0);
  arena_.resize(ArenaRows(options.mega_batch, options.batch, n));
}

std::vector<size_t> DevicePool::alive() const {
  std::vector<size_t> result;
  for (size_t i = 0; i < size(); ++i)
    if (!dropped(i)) result.push_back(i);
  return result;
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

// Returned rows first (each batch entirely from them or entirely new), then the epoch's.
size_t DevicePool::TakeRows(size_t want, uint64_t* out) {
  if (requeued_.empty()) return sampler_.Take(want, out);
  const size_t count = std::min(want, requeued_.size());
  std::copy(requeued_.begin(), requeued_.begin() + count, out);
  requeued_.erase(requeued_.begin(), requeued_.begin() + count);
  return count;
}

// A batch of `want` rows, fewer at the end of an epoch (the sampler's) or at `*cap`, the rows the
// run has left; a mega-batch's rows never cut one.
DevicePool::Assignment DevicePool::Assign(size_t device, size_t want, size_t* used, uint64_t* cap) {
  if (*used + want > arena_.size()) throw std::logic_error("a mega-batch outgrew its row arena");
  Assignment a{device, *used, TakeRows(std::min<uint64_t>(want, *cap), arena_.data() + *used),
               planner_.DrawSlowdown(device)};
  *used += a.count;
  *cap -= a.count;
  return a;
}

uint64_t DevicePool::RowsToEpochEnd() const {
  const uint64_t epoch = sampler_.order().size(), cursor = sampler_.cursor();
  // A sampler at the end of its order has dealt the whole epoch, but rows returned by a failed
  // device are still the epoch's: the epoch ends once they are trained, not a whole epoch later.
  if (cursor == epoch) return requeued_.empty() ? epoch : requeued_.size();
  return requeued_.size() + epoch - cursor;
}

void DevicePool::BeginMegaBatch(uint64_t index) {
  index_ = index;
  injected_.assign(size(), false);
}

MegaBatchRun DevicePool::RunSyncRound(uint64_t budget) {
  planner_.ClearWork();  // each round is timed on its own
  const size_t taken = TakeRows(std::min<uint64_t>(options_.batch, budget), arena_.data());
  std::vector<Assignment> plan;
  size_t offset = 0;
  for (const auto& [device, count] : DispatchPlanner::SplitRound(taken, alive())) {
    plan.push_back(Assignment{device, offset, size_t(count), planner_.DrawSlowdown(device)});
    offset += count;
  }
  MegaBatchRun run = EmptyRun();
  RunPlan(plan, &run);
  return run;
}

DevicePool::Dealt DevicePool::RunMegaBatch(uint64_t budget, uint64_t cap, bool continues, MegaBatchRun* run,
                                           const std::atomic<int>* stop) {
  if (!continues) planner_.BeginMegaBatch();
  const bool wall = engine_.clock == EngineOptions::Clock::kWall;
  if (engine_.schedule == EngineOptions::Schedule::kDynamic && wall) {
    // Across ranks the stop is agreed between mega-batches (`stop` is null there).
    if (engine_.ranks != nullptr) return RunDynamicWallAcrossRanks(budget, cap, run);
    return RunDynamicWall(budget, cap, run, stop);
  }
  return RunPlanned(budget, cap, run, stop);
}


engine::BatchTask DevicePool::TaskFor(const Assignment& a, uint64_t id) {
  engine::BatchTask task;
  task.rows = arena_.data() + a.offset;
  task.count = a.count;
  task.lr = float(states_[a.device].lr);
  task.slowdown = a.slowdown;
  task.emulate_wait = engine_.clock == EngineOptions::Clock::kWall;
  task.id = id;
  if (injected_.size() != size()) injected_.assign(size(), false);
  for (auto it = pending_.begin(); it != pending_.end() && !injected_[a.device]; ++it) {
    if (it->device == a.device && it->megabatch <= index_) {
      injected_[a.device] = true;
      switch (it->kind) {
        case FaultInjection::Kind::kNaN: task.inject_nan = true; break;
        case FaultInjection::Kind::kFail: task.inject_fault = true; break;
        case FaultInjection::Kind::kExit: task.inject_exit = true; break;
        case FaultInjection::Kind::kLost: task.inject_lost = true; break;
      }
      pending_.erase(it);
      break;
    }
  }
  return task;
}

// Deals the plan one batch at a time, each when its device has fewer than kQueued batches waiting,
// then waits for every result (so no worker still reads rows that the next mega-batch overwrites).
DevicePool::Dealt DevicePool::RunPlanned(uint64_t budget, uint64_t cap, MegaBatchRun* run,
                                         const std::atomic<int>* stop) {
  constexpr uint32_t kQueued = 2;  // one running, one waiting: the device never idles for the coordinator
  const bool dynamic = engine_.schedule == EngineOptions::Schedule::kDynamic;
  const Clock::time_point start = Clock::now();
  const std::vector<size_t> devices = alive();
  std::vector<Assignment> plan;
  std::vector<engine::BatchResult> results;
  std::vector<uint32_t> queued(size(), 0);
  size_t used = 0, outstanding = 0;
  auto collect = [&] {
    engine::BatchResult result;
    results_.pop(result);
    results[result.id] = result;
    --queued[result.device];
    --outstanding;
    if (on_batch_) on_batch_(result);
  };
  Dealt dealt;
  while (dealt.rows < budget && cap > 0) {
    if (stop != nullptr && stop->load() != 0) {
      dealt.stopped = true;
      break;
    }
    const std::optional<size_t> next = planner_.NextDevice(devices);
    if (!next) break;
    const size_t device = *next;
    if (queued[device] >= kQueued) {
      collect();
      continue;  // and look at the stop flag again before dealing more
    }
    plan.push_back(Assign(device, dynamic ? RowsForBatch(states_[device].batch) : options_.batch, &used, &cap));
    dealt.rows += plan.back().count;
    planner_.Dealt(device, plan.back().count, plan.back().slowdown);
    results.emplace_back();
    // Every rank makes every task (an injected fault is used up the same everywhere); a device's
    // owner trains it, and the others learn its result in ShareResults.
    engine::BatchTask task = TaskFor(plan.back(), plan.size() - 1);
    if (!local(device)) continue;
    workers_[device]->Submit(std::move(task));
    ++queued[device];
    ++outstanding;
  }
  while (outstanding > 0) collect();
  ShareResults(plan, &results);
  Conclude(plan, results, start, run);
  return dealt;
}

// A synchronous round's plan: submitted whole, every result awaited.
void DevicePool::RunPlan(const std::vector<Assignment>& plan, MegaBatchRun* run) {
  const Clock::time_point start = Clock::now();
  size_t submitted = 0;
  for (size_t k = 0; k < plan.size(); ++k) {
    engine::BatchTask task = TaskFor(plan[k], k);
    if (local(plan[k].device)) workers_[plan[k].device]->Submit(std::move(task)), ++submitted;
  }
  std::vector<engine::BatchResult> results(plan.size());
  for (size_t k = 0; k < submitted; ++k) {
    engine::BatchResult result;
    results_.pop(result);
    results[result.id] = result;
    if (on_batch_) on_batch_(result);
  }
  ShareResults(plan, &results);
  Conclude(plan, results, start, run);
}

// Across ranks: every rank learns the results of the batches the others' devices trained.
void DevicePool::ShareResults(const std::vector<Assignment>& plan, std::vector<engine::BatchResult>* results) {
  if (engine_.ranks == nullptr) return;
  std::vector<size_t> devices;
  for (const Assignment& a : plan) devices.push_back(a.device);
  ShareBatchResults(*engine_.ranks, device_rank_, devices, results);
}

void DevicePool::ReleaseMirrors() {
  for (size_t i = 0; i < size(); ++i)
    if (!local(i)) device(i).ReleaseMirror();
}

std::vector<engine::Device*> DevicePool::DevicesAt(const std::vector<size_t>& ids) {
  std::vector<engine::Device*> devices;
  for (size_t i : ids) devices.push_back(&device(i));
  return devices;
}

void DevicePool::ShareReplicas() {
  if (engine_.ranks == nullptr) return;
  const std::vector<size_t> ids = alive();
  scheduler::ShareReplicas(*engine_.ranks, device_rank_, ids, DevicesAt(ids));
}

void DevicePool::GatherReplicas(int root) {
  if (engine_.ranks == nullptr) return;
  const std::vector<size_t> ids = alive();
  scheduler::GatherReplicas(*engine_.ranks, root, device_rank_, ids, DevicesAt(ids));
}

// Settles a planned run's results into `run` and times it: on the wall clock as it took since
// `start`, on the virtual clock from the rows, the slowdowns and the row cost.
void DevicePool::Conclude(const std::vector<Assignment>& plan, const std::vector<engine::BatchResult>& results,
                          std::chrono::steady_clock::time_point start, MegaBatchRun* run) {
  const uint64_t rows_before = run->rows;
  Settle(plan, results, run);
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

// Two batches per device at first (one running, one waiting, so that no device idles while the
// coordinator answers), then one more for each that comes back healthy, while `deal` submits one.
std::vector<engine::BatchResult> DevicePool::DealAsDevicesReturn(
    const std::vector<size_t>& devices, const std::function<bool(size_t device, uint64_t id)>& deal) {
  constexpr int kQueued = 2;
  std::vector<engine::BatchResult> results;
  size_t outstanding = 0;
  auto next = [&](size_t i) {
    if (!deal(i, results.size())) return;
    results.emplace_back();
    ++outstanding;
  };
  for (int round = 0; round < kQueued; ++round)
    for (size_t i : devices) next(i);
  while (outstanding > 0) {
    engine::BatchResult result;
    results_.pop(result);
    --outstanding;
    results[result.id] = result;
    if (on_batch_) on_batch_(result);
    if (!result.error) next(result.device);
  }
  return results;
}

// Wall clock, dynamic: every device starts with a batch; each result frees its device for the
// next one, so faster devices take more batches. A failed device gets nothing more.
DevicePool::Dealt DevicePool::RunDynamicWall(uint64_t budget, uint64_t cap, MegaBatchRun* run,
                                             const std::atomic<int>* stop) {
  const Clock::time_point start = Clock::now();
  std::vector<Assignment> plan;
  size_t used = 0;
  Dealt dealt;
  const std::vector<engine::BatchResult> results = DealAsDevicesReturn(alive(), [&](size_t i, uint64_t id) {
    if (dealt.rows >= budget || cap == 0) return false;
    if (stop != nullptr && stop->load() != 0) {
      dealt.stopped = true;
      return false;
    }
    plan.push_back(Assign(i, RowsForBatch(states_[i].batch), &used, &cap));
    dealt.rows += plan.back().count;
    workers_[i]->Submit(TaskFor(plan.back(), id));
    return true;
  });
  dealt.stopped = dealt.stopped && dealt.rows < budget && cap > 0;
  Settle(plan, results, run);
  for (size_t k = 0; k < plan.size(); ++k)
    if (!dropped(plan[k].device)) run->busy_s[plan[k].device] += results[k].busy_s;
  run->span_s += Seconds(Clock::now() - start);
  return dealt;
}

// Wall clock, dynamic, across ranks. No rank can wait for the others' word after each batch (a
// message per batch across servers), so the mega-batch's rows are shared out between the ranks in
// proportion to how fast their devices trained in the last mega-batch (RankShares), and each rank
// deals its share dynamically to its own devices, as RunDynamicWall does. Every rank takes every
// share's rows from the sampler, in rank order, so the samplers stay alike; then the ranks swap
// what they dealt and what it gave, and every rank settles the same plan. The shares are
// re-balanced after every mega-batch; within one, the ranks can end apart by up to about a batch
// per device (the price of no message per batch).
DevicePool::Dealt DevicePool::RunDynamicWallAcrossRanks(uint64_t budget, uint64_t cap, MegaBatchRun* run) {
  dist::RankGroup& ranks = *engine_.ranks;
  const size_t me = size_t(ranks.rank()), rank_count = size_t(ranks.size());
  const Clock::time_point start = Clock::now();
  const std::vector<uint64_t> share = RankShares(std::min(budget, cap));
  std::vector<size_t> begin(rank_count + 1, 0);
  size_t used = 0;
  for (size_t r = 0; r < rank_count; ++r) {
    begin[r] = used;
    for (uint64_t want = share[r]; want > 0;) {
      if (used + want > arena_.size()) throw std::logic_error("a mega-batch outgrew its row arena");
      const size_t got = TakeRows(want, arena_.data() + used);
      if (got == 0) break;  // the epoch ended (the budget never passes it)
      used += got;
      want -= got;
    }
  }
  begin[rank_count] = used;

  // My share, dealt to my devices as they come back.
  RankDeal mine;
  size_t next = begin[me];
  std::vector<size_t> my_devices;
  for (size_t i : alive())
    if (local(i)) my_devices.push_back(i);
  const std::vector<engine::BatchResult> my_results = DealAsDevicesReturn(my_devices, [&](size_t i, uint64_t id) {
    if (next >= begin[me + 1]) return false;
    const size_t count = std::min<size_t>(RowsForBatch(states_[i].batch), begin[me + 1] - next);
    const Assignment a{i, next, count, planner_.DrawSlowdown(i)};
    mine.batches.push_back(DealtBatch{a.device, a.offset, a.count, a.slowdown});
    next += count;
    workers_[i]->Submit(TaskFor(a, id));
    return true;
  });
  mine.dealt_to = next;
  mine.span_s = Seconds(Clock::now() - start);

  // Every rank's batches, in rank order: one plan, the same everywhere.
  const std::vector<RankDeal> deals = ShareDeals(ranks, mine);
  std::vector<Assignment> plan;
  std::vector<engine::BatchResult> results;
  Dealt dealt;
  double span_s = 0;
  for (size_t r = 0; r < rank_count; ++r) {
    const RankDeal& deal = deals[r];
    if (deal.dealt_to < begin[r] || deal.dealt_to > begin[r + 1])
      throw std::runtime_error("rank " + std::to_string(r) + " dealt rows outside its share");
    for (size_t k = 0; k < deal.batches.size(); ++k) {
      const DealtBatch& b = deal.batches[k];
      if (b.device >= size() || device_rank_[b.device] != int(r) || b.offset < begin[r] ||
          b.offset + b.count > deal.dealt_to)
        throw std::runtime_error("rank " + std::to_string(r) + " dealt a batch it does not own");
      const Assignment a{size_t(b.device), size_t(b.offset), size_t(b.count), b.slowdown};
      if (r == me) {
        results.push_back(my_results[k]);
      } else {
        // What the owner's dealing used up here too: the device's slowdown draw and a fault due.
        planner_.DrawSlowdown(a.device);
        TaskFor(a, plan.size());
        results.emplace_back();
      }
      results.back().id = plan.size();
      plan.push_back(a);
      dealt.rows += a.count;
    }
    // Rows of a share left undealt (its rank's devices all failed) go back to the queue.
    requeued_.insert(requeued_.end(), arena_.begin() + deal.dealt_to, arena_.begin() + begin[r + 1]);
    span_s = std::max(span_s, deal.span_s);
  }
  ShareResults(plan, &results);
  Settle(plan, results, run);
  std::vector<double> busy_s(size(), 0.0);
  std::vector<uint64_t> rows(size(), 0);
  for (size_t k = 0; k < plan.size(); ++k) {
    if (dropped(plan[k].device)) continue;
    busy_s[plan[k].device] += results[k].busy_s;
    rows[plan[k].device] += plan[k].count;
  }
  for (size_t i = 0; i < size(); ++i) {
    run->busy_s[i] += busy_s[i];
    if (rows[i] > 0 && busy_s[i] > 0) rows_per_s_[i] = double(rows[i]) / busy_s[i];
  }
  run->span_s += span_s;
  return dealt;
}

// `rows` shared out over the ranks in proportion to their surviving devices' rows per second;
// until every one of them has been measured, to their count, each weighted by 1 / its --speed.
// Largest remainders, ties to the lower rank: the same shares on every rank.
std::vector<uint64_t> DevicePool::RankShares(uint64_t rows) const {
  const size_t rank_count = size_t(engine_.ranks->size());
  const std::vector<size_t> devices = alive();
  bool measured = true;
  for (size_t i : devices) measured = measured && rows_per_s_[i] > 0;
  std::vector<double> rate(rank_count, 0.0);
  for (size_t i : devices) {
    const std::vector<double>& speed = engine_.heterogeneity.speed;
    rate[device_rank_[i]] += measured ? rows_per_s_[i] : 1.0 / (speed.empty() ? 1.0 : speed[i]);
  }
  const double total = std::accumulate(rate.begin(), rate.end(), 0.0);
  std::vector<uint64_t> share(rank_count, 0);
  if (total <= 0) return share;
  std::vector<std::pair<double, size_t>> remainder;
  uint64_t given = 0;
  for (size_t r = 0; r < rank_count; ++r) {
    const double exact = double(rows) * rate[r] / total;
    share[r] = std::min<uint64_t>(uint64_t(std::floor(exact)), rows - given);
    given += share[r];
    remainder.push_back({-(exact - std::floor(exact)), r});
  }
  std::sort(remainder.begin(), remainder.end());
  for (size_t k = 0; given < rows; k = (k + 1) % rank_count)
    if (rate[remainder[k].second] > 0) ++share[remainder[k].second], ++given;
  return share;
}

// Drops every device that failed in this mega-batch and returns all of its batches' rows to the
// queue (its replica, and with it even its successful steps, is lost); accounts the others.
void DevicePool::Settle(const std::vector<Assignment>& plan, const std::vector<engine::BatchResult>& results,
                        MegaBatchRun* out) {
  for (const engine::BatchResult& result : results) {
    if (!result.error || dropped(result.device)) continue;
    fault_[result.device] = Describe(result.error);
    if (result.context_lost) DropContextSharers(result.device);
  }
  MegaBatchRun& run = *out;
  for (size_t k = 0; k < plan.size(); ++k) {
    const Assignment& a = plan[k];
    const engine::BatchResult& result = results[k];
    if (dropped(a.device)) {
      requeued_.insert(requeued_.end(), arena_.begin() + a.offset, arena_.begin() + a.offset + a.count);
      continue;
    }
    if (run.diverged_on.empty()) {
      const std::string what = loss_watch_.Check(result.loss_sum / std::max<uint32_t>(result.labeled_rows, 1));
      if (!what.empty()) run.diverged_on = workers_[a.device]->device().spec().id, run.divergence = what;
    }
    // Per device: a worker's results arrive in its own order, whatever the other workers do.
    run.loss_of[a.device] += result.loss_sum / std::max<uint32_t>(result.labeled_rows, 1);
    run.rows += result.count;
    run.rows_of[a.device] += result.count;
    ++run.updates[a.device];
    ++run.batches;
  }
}

// A lost context takes every logical device of its GPU with it: their next call would fail the
// same way, and their replicas live in the lost memory.
void DevicePool::DropContextSharers(size_t failed) {
  const engine::DeviceSpec& spec = workers_[failed]->device().spec();
  for (size_t j = 0; j < size(); ++j) {
    if (j == failed || dropped(j)) continue;
    const engine::DeviceSpec& other = workers_[j]->device().spec();
    if (engine::SharesContext(spec, device_rank_[failed], other, device_rank_[j]))
      fault_[j] = "lost with " + spec.id + ", whose GPU context is gone: " + fault_[failed];
  }
}

// A device whose share fails is dropped as in training (a lost context with every logical device
// of its GPU) and the evaluation is scored again on the devices left: an error in evaluation does
// not end the run while a device remains. Across ranks the ranks would have to agree on the new
// device set first, so there the first error still ends the run.
engine::Evaluation DevicePool::Evaluate(const kernels::Model<float>& model, const data::Dataset& test,
                                        const std::vector<uint64_t>& rows) {
  for (;;) {
    const std::vector<size_t> devices = alive();
    if (devices.empty()) throw std::runtime_error("every device failed in the evaluation; the first: " + fault_.front());
    std::vector<engine::EvaluationSums> parts(devices.size());
    std::vector<std::future<void>> done(devices.size());
    for (size_t k = 0; k < devices.size(); ++k) {
      if (!local(devices[k])) continue;  // its owner scores that share
      const size_t begin = rows.size() * k / devices.size(), end = rows.size() * (k + 1) / devices.size();
      engine::EvaluationSums* part = &parts[k];
      done[k] = workers_[devices[k]]->RunOnDevice([&model, &test, &rows, part, begin, end](engine::Device& d) {
        *part = d.EvaluateRows(model, test, rows.data() + begin, end - begin);
      });
    }
    // Every share finishes before an error is acted on: the jobs point into this frame.
    std::vector<std::exception_ptr> errors(devices.size());
    for (size_t k = 0; k < devices.size(); ++k) {
      if (!done[k].valid()) continue;
      try {
        done[k].get();
      } catch (...) {
        errors[k] = std::current_exception();
      }
    }
    bool failed = false;
    for (size_t k = 0; k < devices.size(); ++k) {
      if (!errors[k]) continue;
      if (engine_.ranks != nullptr) std::rethrow_exception(errors[k]);
      failed = true;
      if (dropped(devices[k])) continue;  // lost already with another device of its GPU
      fault_[devices[k]] = Describe(errors[k]);
      try {
        std::rethrow_exception(errors[k]);
      } catch (const kernels::ContextLost&) {
        DropContextSharers(devices[k]);
      } catch (...) {
      }
    }
    if (failed) continue;
    if (engine_.ranks != nullptr) {
      std::vector<int> owner;
      for (size_t i : devices) owner.push_back(device_rank_[i]);
      ShareEvaluations(*engine_.ranks, owner, &parts);
    }
    engine::EvaluationSums sums;
    for (const engine::EvaluationSums& part : parts) sums.Add(part);
    return sums.Mean();
  }
}

nlohmann::json DevicePool::SaveMeta() const {
  nlohmann::json devices = nlohmann::json::array();
  for (size_t i = 0; i < size(); ++i) {
    devices.push_back({{"id", workers_[i]->device().spec().id},
                       {"batch", states_[i].batch},
                       {"lr", states_[i].lr},
                       {"fault", fault_[i]}});
  }
  nlohmann::json pending = nlohmann::json::array();
  // A process's end is not the device's state: a resumed run must not end again.
  for (const FaultInjection& f : pending_)
    if (f.kind != FaultInjection::Kind::kExit) pending.push_back({f.device, f.megabatch, int(f.kind)});
  nlohmann::json meta = {{"devices", devices},
                         {"sampler_cursor", sampler_.cursor()},
                         {"sampler_rng", sampler_.GeneratorState()},
                         {"row_cost_s", row_cost_s_},
                         {"loss_reference", loss_watch_.reference()},
                         {"pending_faults", pending}};
  planner_.Save(&meta);
  return meta;
}

void DevicePool::AddSections(CheckpointWriter* writer, std::vector<std::vector<float>>* momentum_storage) {
  writer->Add("sampler.order", sampler_.order());
  writer->Add("requeued", requeued_);
  momentum_storage->assign(size(), {});
  for (size_t i : alive()) {
    engine::Device& d = device(i);
    const std::string prefix = "device." + std::to_string(i) + ".";
    writer->Add(prefix + "params", d.HostParams(), d.NumParams() * sizeof(float));
    (*momentum_storage)[i] = d.SaveOptimizerState();
    if (!(*momentum_storage)[i].empty()) writer->Add(prefix + "momentum", (*momentum_storage)[i]);
  }
}

// The state of the data, common to every device set; the caller turns JSON and argument errors
// into data::InputError.
void DevicePool::RestoreDataState(const CheckpointReader& reader, const nlohmann::json& meta) {
  const std::string& source = reader.source();
  sampler_.Restore(reader.Read<uint64_t>("sampler.order"), meta.at("sampler_cursor").get<uint64_t>(),
                   meta.at("sampler_rng").get<std::string>());
  requeued_ = reader.Read<uint64_t>("requeued");
  // At most a mega-batch's rows plus what a shrinking one left over: never two arenas' worth. An
  // elastic restart may come from more devices, whose arena was larger: bounded by the rows then.
  if (requeued_.size() > std::max<size_t>(2 * arena_.size(), sampler_.order().size()))
    throw data::InputError(source, 0, "more returned rows than a mega-batch holds");
  std::vector<uint64_t> trainable = sampler_.order();
  std::sort(trainable.begin(), trainable.end());
  for (uint64_t row : requeued_)
    if (!std::binary_search(trainable.begin(), trainable.end(), row))
      throw data::InputError(source, 0, "returned row " + std::to_string(row) + " is not a training row here");
  row_cost_s_ = meta.at("row_cost_s").get<double>();
  loss_watch_.Restore(meta.value("loss_reference", 0.0));
}

void DevicePool::RestoreReplanned(const CheckpointReader& reader, const nlohmann::json& meta,
                                  const std::vector<float>& global) {
  const std::string& source = reader.source();
  try {
    RestoreDataState(reader, meta);
  } catch (const nlohmann::json::exception& e) {
    throw data::InputError(source, 0, std::string("bad checkpoint state: ") + e.what());
  } catch (const std::invalid_argument& e) {
    throw data::InputError(source, 0, e.what());
  }
  pending_.clear();
  for (size_t i = 0; i < size(); ++i) {
    engine::Device& d = device(i);
    if (global.size() != d.NumParams()) throw data::InputError(source, 0, "global model of the wrong size");
    if (!local(i)) continue;  // another rank's device: its owner restores it
    std::copy(global.begin(), global.end(), d.HostParams());
    d.FinishMerge();
    d.RestoreOptimizerState({});
  }
}

void DevicePool::Restore(const CheckpointReader& reader, const nlohmann::json& meta,
                         const std::vector<float>& global) {
  const std::string& source = reader.source();
  try {
    const nlohmann::json& devices = meta.at("devices");
    if (devices.size() != size())
      throw data::InputError(source, 0, "checkpoint has " + std::to_string(devices.size()) + " devices; this run has " +
                                            std::to_string(size()));
    std::vector<FaultInjection> pending;
    for (const nlohmann::json& f : meta.at("pending_faults")) {
      FaultInjection fault;
      fault.device = f.at(0).get<size_t>();
      fault.megabatch = f.at(1).get<uint64_t>();
      const int kind = f.at(2).get<int>();
      if (kind != int(FaultInjection::Kind::kFail) && kind != int(FaultInjection::Kind::kNaN) &&
          kind != int(FaultInjection::Kind::kLost))
        throw std::invalid_argument("pending fault of unknown kind " + std::to_string(kind));
      fault.kind = FaultInjection::Kind(kind);
      if (fault.device >= size()) throw std::invalid_argument("pending fault for a device that does not exist");
      pending.push_back(fault);
    }
    RestoreDataState(reader, meta);
    planner_.Restore(meta);
    for (size_t i = 0; i < size(); ++i) {
      engine::Device& d = device(i);
      const nlohmann::json& saved = devices.at(i);
      if (saved.at("id").get<std::string>() != d.spec().id)
        throw data::InputError(source, 0, "checkpoint device " + std::to_string(i) + " is " +
                                              saved.at("id").get<std::string>() + "; this run has " + d.spec().id);
      states_[i] = {saved.at("batch").get<double>(), saved.at("lr").get<double>()};
      // Above b_max (--batch) its batches would not fit the replica's buffers, sized for --batch rows.
      if (!(states_[i].batch > 0 && states_[i].batch <= bounds_.b_max && std::isfinite(states_[i].lr) &&
            states_[i].lr > 0))
        throw data::InputError(source, 0, "device " + d.spec().id + " has a bad batch size or learning rate");
      // Another rank's device: its owner restores it (a merge that reads it refills this rank's
      // mirror first).
      if (!local(i)) continue;
      // A device dropped before the checkpoint gets another chance (the user asked for it again),
      // starting from the global model with no momentum.
      const std::string prefix = "device." + std::to_string(i) + ".";
      if (reader.Has(prefix + "params")) {
        reader.ReadInto(prefix + "params", d.HostParams(), d.NumParams());
      } else {
        if (global.size() != d.NumParams()) throw data::InputError(source, 0, "global model of the wrong size");
        std::copy(global.begin(), global.end(), d.HostParams());
      }
      d.FinishMerge();
      d.RestoreOptimizerState(reader.Has(prefix + "momentum") ? reader.Read<float>(prefix + "momentum", d.NumParams())
                                                               : std::vector<float>{});
    }
    pending_ = std::move(pending);
  } catch (const nlohmann::json::exception& e) {
    throw data::InputError(source, 0, std::string("bad checkpoint state: ") + e.what());
  } catch (const std::invalid_argument& e) {
    throw data::InputError(source, 0, e.what());
  }
}

DevicePool::Snapshot DevicePool::TakeSnapshot() const {
  return Snapshot{sampler_, states_, requeued_, row_cost_s_, planner_};
}

void DevicePool::ResetLearningRates(double lr) {
  for (BatchSizeAndLr& state : states_) state.lr = lr * state.batch / double(options_.batch);
}

void DevicePool::RollBack(const Snapshot& snapshot, const std::vector<float>& model) {
  sampler_ = snapshot.sampler;
  requeued_ = snapshot.requeued;
  row_cost_s_ = snapshot.row_cost_s;
  planner_ = snapshot.planner;
  for (size_t i = 0; i < size(); ++i) states_[i] = {snapshot.states[i].batch, snapshot.states[i].lr * 0.5};
  for (size_t i : alive()) {
    if (!local(i)) continue;  // another rank's device: its owner rolls it back
    engine::Device& d = device(i);
    std::copy(model.begin(), model.end(), d.HostParams());
    d.FinishMerge();
    d.RestoreOptimizerState({});
  }
}

}  // namespace xmlt::scheduler
