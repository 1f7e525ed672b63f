// The single-device training loop; see trainer.h.
#include "scheduler/trainer.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <numeric>
#include <random>
#include <stdexcept>

#include "engine/cpu_replica.h"
#include "engine/evaluator.h"

namespace xmlt::scheduler {
namespace {

using Clock = std::chrono::steady_clock;
double Seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

// Rows with labels: rows without any carry no training signal under the uniform-target loss.
std::vector<uint64_t> TrainableRows(const data::Dataset& train) {
  std::vector<uint64_t> rows;
  rows.reserve(train.num_rows());
  for (uint64_t r = 0; r < train.num_rows(); ++r)
    if (train.labels.RowSize(r) > 0) rows.push_back(r);
  return rows;
}

}  // namespace

TrainResult Train(const data::Dataset& train, const data::Dataset* test, const TrainOptions& options,
                  kernels::Model<float>* model, const TrainCallbacks& callbacks) {
  if (options.batch == 0) throw std::invalid_argument("--batch must be positive");
  if (!(options.epochs > 0) || !std::isfinite(options.epochs))
    throw std::invalid_argument("--epochs must be a positive number");
  if (options.mega_batch == 0) throw std::invalid_argument("--mega-batch must be positive");
  if (options.eval.kind == EvalSchedule::Kind::kEveryMegaBatches && options.eval.mega_batches == 0)
    throw std::invalid_argument("--eval-every must be at least one mega-batch");
  std::vector<uint64_t> order = TrainableRows(train);
  if (order.empty()) throw std::invalid_argument(train.source + ": no training row has a label");

  engine::CpuReplica replica(std::move(*model), options.batch, options.local_momentum);
  const uint64_t rows_per_epoch = order.size();
  const double requested_rows = options.epochs * double(rows_per_epoch);
  if (requested_rows > 1e15) throw std::invalid_argument("--epochs is too large");
  const uint64_t total_rows = uint64_t(std::llround(requested_rows));
  if (total_rows == 0)
    throw std::invalid_argument("--epochs " + std::to_string(options.epochs) + " is less than one row of " +
                                train.source);
  std::mt19937_64 shuffle_rng(options.seed ^ 0x9e3779b97f4a7c15ULL);

  TrainResult result;
  double train_seconds = 0, loss_sum = 0;
  uint64_t loss_batches = 0, rows_done = 0, next_epoch_end = 0;
  uint64_t batches_since_eval = 0;
  const Clock::time_point start = Clock::now();

  auto evaluate = [&]() {
    EvalRecord record;
    const Clock::time_point eval_start = Clock::now();
    if (test != nullptr) record.test = engine::Evaluate(replica.model(), *test);
    record.eval_time_s = Seconds(Clock::now() - eval_start);
    record.megabatch = result.batches / options.mega_batch;
    record.epoch = double(rows_done) / double(rows_per_epoch);
    record.train_time_s = train_seconds;
    record.wall_time_s = Seconds(Clock::now() - start);
    record.train_samples = rows_done;
    record.train_loss = loss_batches > 0 ? loss_sum / double(loss_batches) : 0.0;
    record.devices.push_back({"cpu:0", options.batch, options.lr, batches_since_eval, 1.0,
                              train_seconds, 0.0});
    loss_sum = 0;
    loss_batches = 0;
    batches_since_eval = 0;
    result.last = record;
    if (result.best.train_samples == 0 || record.test.metrics.p1 > result.best.test.metrics.p1)
      result.best = record;
    if (callbacks.on_eval) callbacks.on_eval(record);
  };

  size_t cursor = order.size();  // forces a shuffle before the first batch
  while (rows_done < total_rows) {
    if (cursor == order.size()) {
      std::shuffle(order.begin(), order.end(), shuffle_rng);
      cursor = 0;
      next_epoch_end = rows_done + rows_per_epoch;
    }
    // The epoch's tail is a shorter batch rather than dropped rows.
    const size_t count = size_t(std::min<uint64_t>({options.batch, order.size() - cursor, total_rows - rows_done}));
    const Clock::time_point step_start = Clock::now();
    const kernels::cpu::LossResult loss = replica.TrainBatch(train, order.data() + cursor, count, options.lr);
    train_seconds += Seconds(Clock::now() - step_start);
    if (!std::isfinite(loss.loss_sum))
      throw std::runtime_error("training diverged (non-finite loss) after " + std::to_string(result.batches) +
                               " batches; lower --lr");
    cursor += count;
    rows_done += count;
    ++result.batches;
    ++batches_since_eval;
    loss_sum += loss.loss_sum / std::max<uint32_t>(loss.labeled_rows, 1);
    ++loss_batches;
    if (callbacks.on_progress) callbacks.on_progress(rows_done, total_rows, loss.loss_sum / std::max<uint32_t>(loss.labeled_rows, 1));

    const bool finished = rows_done >= total_rows;
    bool due = false;
    switch (options.eval.kind) {
      case EvalSchedule::Kind::kEachEpoch: due = rows_done == next_epoch_end; break;
      case EvalSchedule::Kind::kEnd: break;
      case EvalSchedule::Kind::kEveryMegaBatches:
        due = result.batches % (uint64_t(options.eval.mega_batches) * options.mega_batch) == 0;
        break;
    }
    if (due || finished) evaluate();
  }
  *model = std::move(replica.model());
  return result;
}

}  // namespace xmlt::scheduler
