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
#include "scheduler/epoch_sampler.h"

namespace xmlt::scheduler {
namespace {

using Clock = std::chrono::steady_clock;
double Seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

}  // namespace

TrainResult Train(const data::Dataset& train, const data::Dataset* test, const TrainOptions& options,
                  kernels::Model<float>* model, const TrainCallbacks& callbacks) {
  ValidateTrainOptions(options);
  EpochSampler sampler(train, options.seed);
  std::vector<uint64_t> rows(options.batch);

  engine::CpuReplica replica(std::move(*model), options.batch, options.local_momentum);
  const uint64_t rows_per_epoch = sampler.rows_per_epoch();
  const uint64_t total_rows = TotalTrainingRows(options, rows_per_epoch, train.source);

  TrainResult result;
  double train_seconds = 0, loss_sum = 0;
  uint64_t loss_batches = 0, rows_done = 0;
  uint64_t batches_since_eval = 0, rows_since_eval = 0;
  double busy_before_eval = 0;
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
    DeviceRecord device;
    device.id = "cpu:0";
    device.batch = options.batch;
    device.lr = options.lr;
    device.updates = batches_since_eval;
    device.rows = rows_since_eval;
    device.busy_s = train_seconds - busy_before_eval;
    record.devices.push_back(device);
    busy_before_eval = train_seconds;
    rows_since_eval = 0;
    loss_sum = 0;
    loss_batches = 0;
    batches_since_eval = 0;
    result.last = record;
    if (result.best.train_samples == 0 || record.test.metrics.p1 > result.best.test.metrics.p1)
      result.best = record;
    if (callbacks.on_eval) callbacks.on_eval(record);
  };

  while (rows_done < total_rows) {
    // An epoch's tail comes out as a shorter batch rather than dropped rows.
    const size_t count = sampler.Take(size_t(std::min<uint64_t>(options.batch, total_rows - rows_done)), rows.data());
    const Clock::time_point step_start = Clock::now();
    const kernels::cpu::LossResult loss = replica.TrainBatch(train, rows.data(), count, options.lr);
    train_seconds += Seconds(Clock::now() - step_start);
    if (!std::isfinite(loss.loss_sum))
      throw std::runtime_error("training diverged (non-finite loss) after " + std::to_string(result.batches) +
                               " batches; lower --lr");
    rows_done += count;
    rows_since_eval += count;
    ++result.batches;
    ++batches_since_eval;
    loss_sum += loss.loss_sum / std::max<uint32_t>(loss.labeled_rows, 1);
    ++loss_batches;
    if (callbacks.on_progress) callbacks.on_progress(rows_done, total_rows, loss.loss_sum / std::max<uint32_t>(loss.labeled_rows, 1));

    const bool finished = rows_done >= total_rows;
    bool due = false;
    switch (options.eval.kind) {
      case EvalSchedule::Kind::kEachEpoch: due = rows_done % rows_per_epoch == 0; break;
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
