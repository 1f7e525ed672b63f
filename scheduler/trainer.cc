// The single-device training loop; see trainer.h.
#include "scheduler/trainer.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <stdexcept>

#include "data/input_error.h"
#include "engine/cpu_replica.h"
#include "engine/evaluator.h"
#include "scheduler/checkpoint_file.h"
#include "scheduler/epoch_sampler.h"
#include "scheduler/loss_watch.h"
#include "scheduler/run_progress.h"

namespace xmlt::scheduler {
namespace {

using Clock = std::chrono::steady_clock;
double Seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

}  // namespace

TrainResult Train(const data::Dataset& train, const data::Dataset* test, const TrainOptions& options,
                  kernels::Model<float>* model, const TrainCallbacks& callbacks, const RunControl& control) {
  ValidateTrainOptions(options);
  if (!control.faults.empty()) throw std::invalid_argument("--inject-fault needs a multi-device --algo");
  EpochSampler sampler(train, options.seed);
  std::vector<uint64_t> rows(options.batch);
  const nlohmann::json fingerprint = RunFingerprint(options, nullptr, model->shape, train, test);
  engine::CpuReplica replica(std::move(*model), options.batch, options.local_momentum, options.math);
  const uint64_t rows_per_epoch = sampler.rows_per_epoch();
  const uint64_t total_rows = TotalTrainingRows(options, rows_per_epoch, train.source);
  const uint64_t batches_per_megabatch = options.mega_batch;
  double lr = options.lr;  // halved by rollbacks
  RunProgress progress;
  LossWatch loss_watch(options.divergence_factor);
  progress.since_eval.resize(1);
  progress.since_eval[0].id = "cpu:0";
  auto event = [&](const std::string& text) {
    if (callbacks.on_event) callbacks.on_event(text);
  };

  if (!control.resume_dir.empty()) {
    const CheckpointReader reader = CheckpointReader::Open(control.resume_dir);
    const nlohmann::json meta = ParseCheckpointMeta(reader.meta(), reader.source());
    CheckSameRun(meta.at("run"), fingerprint, reader.source());
    try {
      if (!meta.contains("single")) throw data::InputError(reader.source(), 0, "not a single-device checkpoint");
      const nlohmann::json& single = meta.at("single");
      const size_t n = replica.model().params.size();
      reader.ReadInto("params", replica.model().params.data(), n);
      replica.RestoreVelocity(reader.Has("momentum") ? reader.Read<float>("momentum", n) : std::vector<float>{});
      sampler.Restore(reader.Read<uint64_t>("sampler.order"), single.at("sampler_cursor").get<uint64_t>(),
                      single.at("sampler_rng").get<std::string>());
      lr = single.at("lr").get<double>();
      loss_watch.Restore(single.value("loss_reference", 0.0));
      if (!(lr > 0)) throw std::invalid_argument("bad learning rate");
      if (ResumeLowersLr(meta.at("run"), options.lr)) lr = options.lr;
      progress = ProgressFromJson(meta.at("progress"));
      CheckEpochsCoverProgress(total_rows, progress.rows_done, rows_per_epoch, reader.source());
      if (progress.since_eval.size() != 1) throw std::invalid_argument("not one device record");
    } catch (const nlohmann::json::exception& e) {
      throw data::InputError(reader.source(), 0, std::string("bad checkpoint state: ") + e.what());
    } catch (const std::invalid_argument& e) {
      throw data::InputError(reader.source(), 0, std::string("bad checkpoint state: ") + e.what());
    }
    if (callbacks.on_resume) callbacks.on_resume(progress.evals);
    event("resumed from " + reader.source() + " after batch " + std::to_string(progress.batches) +
          (ResumeLowersLr(meta.at("run"), options.lr) ? " with the lower --lr " + std::to_string(options.lr) : ""));
  }

  TrainResult outcome;
  const Clock::time_point start = Clock::now();
  const double wall_before = progress.wall_seconds;
  auto wall_seconds = [&] { return wall_before + Seconds(Clock::now() - start); };

  auto write_checkpoint = [&](const char* why) {
    if (control.checkpoint_dir.empty()) return;
    progress.wall_seconds = wall_seconds();
    const nlohmann::json single = {{"lr", lr},
                                   {"sampler_cursor", sampler.cursor()},
                                   {"sampler_rng", sampler.GeneratorState()},
                                   {"loss_reference", loss_watch.reference()}};
    const nlohmann::json meta = {{"run", fingerprint}, {"progress", ProgressToJson(progress)}, {"single", single}};
    CheckpointWriter writer(meta.dump());
    writer.Add("params", replica.model().params);
    if (!replica.velocity().empty()) writer.Add("momentum", replica.velocity());
    writer.Add("sampler.order", sampler.order());
    writer.Write(control.checkpoint_dir);
    outcome.checkpoint = CheckpointPath(control.checkpoint_dir);
    event(std::string("checkpoint (") + why + ") after batch " + std::to_string(progress.batches) + ": " +
          outcome.checkpoint);
  };

  const std::vector<uint64_t> eval_rows = test == nullptr ? std::vector<uint64_t>{} : EvalSample(test->num_rows(), options);
  const std::vector<uint64_t> all_test_rows =
      test == nullptr ? std::vector<uint64_t>{} : engine::SampleEvalRows(test->num_rows(), 0, 0);
  auto evaluate = [&]() {
    EvalRecord record;
    const Clock::time_point eval_start = Clock::now();
    if (test != nullptr) {
      const bool whole = progress.rows_done >= total_rows && options.final_eval_full;
      const std::vector<uint64_t>& rows = whole ? all_test_rows : eval_rows;
      record.test = engine::EvaluateRows(replica.model(), *test, rows.data(), rows.size()).Mean();
    }
    record.eval_time_s = Seconds(Clock::now() - eval_start);
    // Completed mega-batches; the run's last one counts even when the end cut it short, as in
    // multi-device runs (an evaluation there would otherwise repeat the previous number).
    record.megabatch = progress.batches / batches_per_megabatch +
                       (progress.rows_done >= total_rows && progress.batches % batches_per_megabatch != 0);
    record.epoch = double(progress.rows_done) / double(rows_per_epoch);
    record.train_time_s = progress.train_seconds;
    record.wall_time_s = wall_seconds();
    record.train_samples = progress.rows_done;
    record.train_loss = progress.loss_batches > 0 ? progress.loss_sum / double(progress.loss_batches) : 0.0;
    record.rollbacks = progress.rollbacks;
    DeviceRecord& device = progress.since_eval[0];
    device.batch = options.batch;
    device.lr = lr;
    record.devices.push_back(device);
    device.updates = device.rows = 0;
    device.busy_s = 0;
    progress.loss_sum = 0;
    progress.loss_batches = 0;
    progress.evals.push_back(record);
    if (callbacks.on_eval) callbacks.on_eval(record);
  };

  // The last good state, taken every mega-batch, for rollbacks.
  std::vector<float> good_params = replica.model().params;
  EpochSampler good_sampler = sampler;
  RunProgress good_progress = progress;

  while (progress.rows_done < total_rows) {
    if (control.stop_signal != nullptr && control.stop_signal->load() != 0) {
      outcome.stopped_by_signal = control.stop_signal->load();
      write_checkpoint("stop");
      break;
    }
    // An epoch's tail comes out as a shorter batch rather than dropped rows.
    const size_t count = sampler.Take(size_t(std::min<uint64_t>(options.batch, total_rows - progress.rows_done)), rows.data());
    const Clock::time_point step_start = Clock::now();
    const kernels::cpu::LossResult loss = replica.TrainBatch(train, rows.data(), count, float(lr));
    const double step_s = Seconds(Clock::now() - step_start);
    progress.train_seconds += step_s;
    const std::string divergence = loss_watch.Check(loss.loss_sum / std::max<uint32_t>(loss.labeled_rows, 1));
    if (!divergence.empty()) {
      const uint32_t rollbacks = progress.rollbacks + 1;
      const double spent = progress.train_seconds;
      std::copy(good_params.begin(), good_params.end(), replica.model().params.begin());
      replica.RestoreVelocity({});
      sampler = good_sampler;
      progress = good_progress;
      progress.rollbacks = rollbacks;
      progress.train_seconds = spent;
      lr *= 0.5;
      if (rollbacks > control.max_rollbacks) {
        write_checkpoint("last good state");
        throw std::runtime_error("training diverged at batch " + std::to_string(progress.batches + 1) + " (" +
                                 divergence + ") after " + std::to_string(control.max_rollbacks) +
                                 " rollbacks with halved learning rates (--max-rollbacks); " +
                                 (control.checkpoint_dir.empty() ? std::string("lower --lr")
                                                                 : "--resume " + control.checkpoint_dir + " with a lower --lr"));
      }
      event("diverged (" + divergence + "): rolled back to batch " + std::to_string(progress.batches) +
            ", learning rate halved to " + std::to_string(lr) + " (rollback " + std::to_string(rollbacks) +
            " of at most " + std::to_string(control.max_rollbacks) + ")");
      good_progress = progress;
      continue;
    }
    const double batch_loss = loss.loss_sum / std::max<uint32_t>(loss.labeled_rows, 1);
    progress.rows_done += count;
    ++progress.batches;
    progress.since_eval[0].rows += count;
    ++progress.since_eval[0].updates;
    progress.since_eval[0].busy_s += step_s;
    progress.loss_sum += batch_loss;
    ++progress.loss_batches;
    if (callbacks.on_progress) callbacks.on_progress(progress.rows_done, total_rows, batch_loss);

    const bool finished = progress.rows_done >= total_rows;
    bool due = false;
    switch (options.eval.kind) {
      case EvalSchedule::Kind::kEachEpoch: due = progress.rows_done % rows_per_epoch == 0; break;
      case EvalSchedule::Kind::kEnd: break;
      case EvalSchedule::Kind::kEveryMegaBatches:
        due = progress.batches % (uint64_t(options.eval.mega_batches) * batches_per_megabatch) == 0;
        break;
    }
    if (due) evaluate();
    if (progress.batches % batches_per_megabatch == 0 || finished) {
      good_params = replica.model().params;
      good_sampler = sampler;
      good_progress = progress;
      const uint64_t megabatches = progress.batches / batches_per_megabatch;
      if (finished) {
        // The trained model must not be lost with a checkpoint that could not be written (a full
        // disk): the caller saves the model and metrics first, then reports this.
        try {
          write_checkpoint("end");
        } catch (const std::exception& e) {
          outcome.end_checkpoint_error = e.what();
        }
      } else if (control.checkpoint_every > 0 && megabatches % control.checkpoint_every == 0) {
        write_checkpoint("periodic");
      }
    }
  }
  // The end's own evaluation comes after the end checkpoint, which therefore holds the run as a
  // longer one passes through this point: extending it with more --epochs gives that longer run.
  const bool finished = progress.rows_done >= total_rows && outcome.stopped_by_signal == 0;
  if (finished && (progress.evals.empty() || progress.evals.back().train_samples != progress.rows_done)) evaluate();
  *model = std::move(replica.model());
  TrainResult result = ResultOf(progress);
  result.stopped_by_signal = outcome.stopped_by_signal;
  result.checkpoint = outcome.checkpoint;
  result.end_checkpoint_error = outcome.end_checkpoint_error;
  return result;
}

}  // namespace xmlt::scheduler
