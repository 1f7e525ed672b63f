// The learning-rate search; see lr_search.h.
#include "run/lr_search.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <numeric>
#include <random>
#include <sstream>
#include <stdexcept>

#include "data/row_subset.h"
#include "run/multi_device_run.h"
#include "run/run_control.h"
#include "run/one_device_run.h"

namespace xmlt::run {

namespace {

// A candidate's run failed for another reason than its rate: no rate is picked from a grid that
// a device error cut, and the run does not start (nothing is trained, so there is nothing to
// checkpoint).
std::runtime_error SearchDeviceFailed(const engine::DeviceSpec& device, double lr, const std::string& why) {
  std::ostringstream text;
  text << "the learning-rate search failed on " << device.id << " at learning rate " << lr << ": " << why
       << "; no learning rate was picked and nothing was trained";
  return std::runtime_error(text.str());
}

}  // namespace

std::vector<double> LrSearchGrid() { return {0.005, 0.01, 0.05, 0.1, 0.5, 1, 5}; }

LrSearchSplit SplitForLrSearch(uint64_t rows, uint64_t seed) {
  if (rows < 2) throw std::invalid_argument("the learning-rate search needs at least 2 training rows to hold some out");
  // Its own stream of the seed, so that the slice does not move when other uses of it change.
  std::vector<uint64_t> order(rows);
  std::iota(order.begin(), order.end(), uint64_t{0});
  std::shuffle(order.begin(), order.end(), std::mt19937_64(seed ^ 0x6c722d7365617263ull));
  const uint64_t heldout = std::clamp<uint64_t>(rows / 10, 1, 5000);
  LrSearchSplit split;
  split.heldout.assign(order.begin(), order.begin() + int64_t(heldout));
  split.search.assign(order.begin() + int64_t(heldout), order.end());
  return split;
}

engine::DeviceSpec LrSearchDevice(const std::vector<engine::DeviceSpec>& devices, int ranks) {
  const bool all_gpus = !devices.empty() && std::all_of(devices.begin(), devices.end(), [](const engine::DeviceSpec& d) {
    return d.kind == engine::DeviceKind::kCuda;
  });
  if (!all_gpus || ranks > 1) return engine::DeviceSpec{};
  engine::DeviceSpec gpu = devices.front();
  gpu.logical = 0;
  gpu.id = "cuda:" + std::to_string(gpu.ordinal);
  return gpu;
}

LrSearchResult SearchLearningRate(const data::Dataset& train, const kernels::ModelShape& shape,
                                  const scheduler::TrainOptions& options, const engine::DeviceSpec& device,
                                  const engine::SampledOutputOptions& sampled) {
  const auto start = std::chrono::steady_clock::now();
  const LrSearchSplit split = SplitForLrSearch(train.num_rows(), options.seed);
  LrSearchResult result;
  result.heldout_rows = split.heldout.size();
  result.search_rows = split.search.size();
  result.sampled = sampled.enabled;
  const data::Dataset heldout = data::SelectRows(train, split.heldout);
  const data::Dataset search = data::SelectRows(train, split.search);
  // Either side without a labelled row leaves nothing to choose by: said as such, not as a
  // training set without labels or as seven candidates tied at zero.
  if (search.labels.nnz() == 0)
    throw std::invalid_argument("the learning-rate search: none of the " + std::to_string(search.num_rows()) +
                                " rows it trains on has a label (every labelled row is among the " +
                                std::to_string(heldout.num_rows()) + " held out); give a learning rate");
  if (heldout.labels.nnz() == 0)
    throw std::invalid_argument("the learning-rate search: none of the " + std::to_string(heldout.num_rows()) +
                                " held-out rows has a label, so no candidate can be scored; give a learning rate");

  const uint64_t batches_per_pass = (result.search_rows + options.batch - 1) / options.batch;
  result.batches_per_candidate = std::min<uint64_t>(2 * batches_per_pass, 100);
  scheduler::TrainOptions trial = options;
  trial.epochs = double(result.batches_per_candidate * options.batch) / double(result.search_rows);
  trial.eval = scheduler::EvalSchedule{scheduler::EvalSchedule::Kind::kEnd, 0};
  trial.eval_rows = 0;
  trial.final_eval_full = true;
  RunControl control;
  control.max_rollbacks = 0;  // a candidate that diverges is out, not rescued at half the rate
  scheduler::SchedulerOptions scheduling = SingleDeviceScheduling(device);
  scheduling.sampled_output = sampled;
  scheduling.sampled_output.report_active_sets = false;  // the run reports its own

  for (const double lr : LrSearchGrid()) {
    LrCandidate candidate;
    candidate.lr = lr;
    trial.lr = float(lr);
    kernels::Model<float> model = kernels::InitModel<float>(shape, options.seed);
    try {
      const TrainResult run = RunMultiDevice(search, &heldout, trial, scheduling, &model, {}, control);
      candidate.heldout_p1 = run.last.test.metrics.p1;
      candidate.heldout_loss = run.last.test.loss;
      candidate.diverged = !std::isfinite(candidate.heldout_loss);
    } catch (const RunStopped& stopped) {
      // Train stops a diverged run it may not roll back. A run stopped for want of a device is
      // not a verdict on the rate: the search device failed, and the search with it.
      if (stopped.why() != RunStopped::Why::kDiverged) throw SearchDeviceFailed(device, lr, stopped.what());
      candidate.diverged = true;
    } catch (const std::invalid_argument&) {
      throw;  // the options or the data: said as they are
    } catch (const std::exception& e) {
      throw SearchDeviceFailed(device, lr, e.what());  // a device error (out of memory, a lost GPU)
    }
    if (candidate.diverged) {
      candidate.heldout_p1 = 0;
      candidate.heldout_loss = std::numeric_limits<double>::infinity();
    }
    result.candidates.push_back(candidate);
  }
  size_t best = result.candidates.size();
  for (size_t i = 0; i < result.candidates.size(); ++i) {
    const LrCandidate& c = result.candidates[i];
    if (c.diverged) continue;
    if (best == result.candidates.size() || c.heldout_p1 > result.candidates[best].heldout_p1 ||
        (c.heldout_p1 == result.candidates[best].heldout_p1 && c.heldout_loss < result.candidates[best].heldout_loss))
      best = i;
  }
  if (best == result.candidates.size()) throw std::runtime_error("the learning-rate search: every candidate learning rate diverged");
  result.winner = result.candidates[best].lr;
  result.picked = result.candidates[best == 0 ? 0 : best - 1].lr;
  result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return result;
}

}  // namespace xmlt::run
