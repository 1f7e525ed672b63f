// One `xmltrain train` run from its parsed flags; see train_run.h. Its flags are train_flags.h's,
// their checks train_settings.h's, what it says train_report.h's.
#include "apps/train_run.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <memory>
#include <optional>
#include <nlohmann/json.hpp>
#include <sstream>

#include "apps/checkpoint_folder.h"
#include "apps/cli.h"
#include "apps/fault_flag.h"
#include "apps/propensity_flag.h"
#include "apps/rank_agreement.h"
#include "apps/setting_flags.h"
#include "apps/stdout_check.h"
#include "apps/stop_signals.h"
#include "apps/train_flags.h"
#include "apps/train_outputs.h"
#include "apps/train_presets.h"
#include "apps/train_report.h"
#include "apps/train_settings.h"
#include "data/folder_lock.h"
#include "data/input_error.h"
#include "data/row_normalization.h"
#include "engine/device_query.h"
#include "engine/device_spec.h"
#include "engine/model_file.h"
#include "kernels/cpu/bf16_gemm.h"
#include "kernels/cpu/cpu_isa.h"
#include "kernels/output_math.h"
#include "kernels/propensity.h"
#include "ranks/rank_group.h"
#include "run/checkpoint_file.h"
#include "run/lr_search.h"
#include "run/multi_device_run.h"
#include "run/run_progress.h"
#include "run/trainer.h"

namespace xmlt::apps {
namespace {

// Beyond any count or tf-idf weight: unnormalized values this large make the first steps explode
// whatever the learning rate.
constexpr float kLargeRawValue = 1e4f;

float LargestMagnitude(const data::CsrMatrix& features) {
  float largest = features.nnz() > 0 && features.binary() ? 1.0f : 0.0f;
  for (float v : features.values) largest = std::max(largest, std::fabs(v));
  return largest;
}

int RunTrainOnRanks(TrainFlags& f, ranks::RankGroup* ranks, TrainSession& session);

}  // namespace

int RunTrain(TrainFlags& f, TrainSession& session) {
  if (!(f.rank_timeout_s > 0)) throw std::invalid_argument("--rank-timeout must be positive");
  std::unique_ptr<ranks::RankGroup> ranks =
      xmlt::ranks::JoinRankGroup(std::chrono::milliseconds(int64_t(std::min(f.rank_timeout_s, 1e9) * 1000)));
  if (ranks->size() <= 1) return RunTrainOnRanks(f, ranks.get(), session);
  try {
    return RunTrainOnRanks(f, ranks.get(), session);
  } catch (const RanksDisagree&) {
    // Every rank found it: each ends by itself, and rank 0 says why (exit 2, as a usage error).
    if (ranks->rank() == 0) throw;
    return kExitBadInput;
  } catch (const std::exception& e) {
    // The other ranks would wait for this one until their timeout: end them all now, with the
    // exit code one process would have (2 for bad usage or input).
    const bool usage = dynamic_cast<const std::invalid_argument*>(&e) != nullptr ||
                       dynamic_cast<const data::InputError*>(&e) != nullptr;
    std::string why = e.what();  // in flags, as one process says it
    if (const auto* option = dynamic_cast<const scheduler::OptionError*>(&e)) why = DescribeInFlags(*option);
    if (const auto* mismatch = dynamic_cast<const run::RunMismatch*>(&e)) why = DescribeInFlags(*mismatch);
    if (const auto* stopped = dynamic_cast<const run::RunStopped*>(&e)) why = DescribeInFlags(*stopped);
    ranks->Abort(why, usage ? kExitBadInput : kExitFailure);
  }
  return kExitFailure;  // not reached: Abort ends the process
}

namespace {

int RunTrainOnRanks(TrainFlags& f, ranks::RankGroup* ranks, TrainSession& session) {
  using Clock = std::chrono::steady_clock;
  ApplyAlgorithm(f);
  SpreadOverRanks(f, ranks);
  const bool writer = ranks->rank() == 0;
  CheckFlagsBeforeLoading(f);
  CheckGpusExist(f);
  // A bad XMLT_CPU_ISA (unknown, or more than this CPU runs) is refused before any loading.
  try {
    kernels::cpu::ActiveCpuIsa();
  } catch (const std::runtime_error& e) {
    throw std::invalid_argument(e.what());
  }
  for (const std::string& fault : f.faults) f.control.faults.push_back(ParseFaultInjection(fault));
  // Checked now, not once the data is loaded; and before the folder lock, which would create it.
  if (!f.control.resume_dir.empty() && !std::filesystem::exists(run::CheckpointPath(f.control.resume_dir)))
    throw std::invalid_argument("--resume " + f.control.resume_dir +
                                ": no checkpoint here (resume from the folder the run wrote its checkpoints to)");
  // A resumed run keeps checkpointing where it resumed from unless told otherwise.
  if (!f.control.resume_dir.empty() && f.control.checkpoint_dir.empty()) f.control.checkpoint_dir = f.control.resume_dir;
  if (f.control.checkpoint_every > 0 && f.control.checkpoint_dir.empty())
    throw std::invalid_argument("--checkpoint-every needs --checkpoint-dir (or --resume, which checkpoints there)");
  if (f.hidden != "auto") f.options.hidden = ParseHidden(f.hidden);
  f.options.eval = ParseEvalEvery(f.eval_every);
  if (f.final_eval != "full" && f.final_eval != "sample")
    throw std::invalid_argument("--final-eval must be 'full' or 'sample', not '" + f.final_eval + "'");
  f.options.final_eval_full = f.final_eval == "full";
  if (!f.options.final_eval_full && f.options.eval_rows == 0)
    throw std::invalid_argument("--final-eval sample scores the --eval-rows sample; give --eval-rows N");
  if (f.given("--propensity") && f.test.empty())
    throw std::invalid_argument("--propensity weighs the PSP@k of the --test evaluations; give --test");
  const bool sampled_output = f.algo == "slide" || (f.cpu_output == "sampled" && f.algo != "single");
  f.options.math = ParseOutputMath(f.math, f.engine.devices, sampled_output);
  const kernels::PropensityModel propensity = ParsePropensity(f.propensity);
  f.options.propensity = propensity;
  const bool lr_auto = f.lr == "auto";
  if (!lr_auto) f.options.lr = ParsePositive("--lr", f.lr);
  f.options.lr_schedule = scheduler::ParseLrSchedule(f.lr_schedule);
  // Held until the run ends: one run at a time writes a checkpoint folder.
  const std::unique_ptr<data::FolderLock> checkpoint_lock = ClaimTrainOutputs(f, session, writer);
  // From here a signal asks for a stop: before training (loading, the --lr auto search) it is
  // taken at the next step with a message, and a second one exits at once, as in training.
  StopSignals signals(session.second_signal_exits);
  const auto stopped_before_training = [&](const char* during) {
    const int signal = signals.requested().load();
    session.stopped_by_signal = signal;
    if (signal != 0 && writer && session.print)
      std::cerr << "stopped by signal " << signal << " " << during << ", before training began: nothing was trained\n";
    return signal;
  };
  const std::unique_ptr<run::MetricsLog> metrics_log = OpenMetricsLog(f.metrics);
  run::MetricsLog& metrics = *metrics_log;

  const Clock::time_point load_start = Clock::now();
  if (f.normalize != "l2" && f.normalize != "none") throw std::invalid_argument("--normalize must be l2 or none");
  data::Dataset train = session.train ? *session.train : LoadWithWarnings(f.train, f.train_labels, f.data, writer);
  // The training data alone sets the model's shape: a test row with a label or feature id the
  // training data does not have is scored as eval scores it (ids beyond the model left out).
  const LrScaling lr_scaling = ApplyPreset(f, train.num_rows());
  kernels::ModelShape shape;
  shape.num_features = train.num_features();
  shape.num_labels = train.num_labels();
  if (f.hidden == "auto") f.options.hidden = {DefaultHidden(shape.num_features, shape.num_labels)};
  shape.hidden = f.options.hidden;
  shape.normalize_rows = f.normalize == "l2";
  kernels::ValidateShape(shape);
  std::unique_ptr<data::Dataset> test;
  if (session.test || !f.test.empty()) {
    test = std::make_unique<data::Dataset>(AsModelInput(
        session.test ? *session.test : LoadWithWarnings(f.test, f.test_labels, f.data, writer), shape, f.test, writer));
    // Scores of rows without labels would be means over nothing, printed as zeros (eval refuses it too).
    if (test->labels.nnz() == 0)
      throw data::InputError(f.test, 0, "no row has a label: nothing to evaluate (leave out --test, or give a "
                                        "labelled test set)");
    WarnUnlabelledEvaluationRows(*test, f.test, writer);
  }
  if (shape.normalize_rows) train = data::NormalizeRowsL2(train);
  const double load_seconds = std::chrono::duration<double>(Clock::now() - load_start).count();
  const float largest_raw_value = f.normalize == "none" ? LargestMagnitude(train.features) : 0.0f;

  ApplySampledOutputPreset(f, shape.num_labels);
  // The test rows are also scored with the propensity-scored metrics, the propensities from the
  // training labels.
  if (test && train.num_rows() >= 2)
    test->inverse_propensity = data::SharedArray<float>(kernels::InversePropensities(
        train.labels, std::max<uint64_t>(test->num_labels(), shape.num_labels), propensity));
  if (ranks->size() > 1) {
    // Before anything is trained, the ranks compare what each is about to train.
    nlohmann::json settings = run::RunFingerprint(f.options, f.engine, shape, train, test.get());
    settings["lr"] = f.lr;  // as given: 'auto' has no value yet, and the scaling is the same on every rank
    settings["epochs"] = f.options.epochs;
    settings["eval_every"] = f.eval_every;
    settings["checkpoint_every"] = f.control.checkpoint_every;
    settings["max_rollbacks"] = f.control.max_rollbacks;
    settings["resume"] = !f.control.resume_dir.empty();
    settings["inject_fault"] = f.faults;
    settings["propensity"] = f.propensity;  // the ranks add up each other's weighted evaluation sums
    CheckRanksAgree(ranks, settings);
  }
  const uint64_t planned_host_bytes = CheckMemoryPlan(f, shape, train);
  nlohmann::json lr_search_json;
  // A resume goes on at the checkpoint's rate unless --lr gives a number (checkpoint_folder.h).
  const std::optional<float> resumed_lr =
      !f.control.resume_dir.empty() && (lr_auto || !f.given("--lr"))
          ? CheckpointedLearningRate(f.control.resume_dir, f.engine.devices)
          : std::nullopt;
  if (const int signal = stopped_before_training("while the data loaded")) return 128 + signal;
  if (lr_auto && !resumed_lr) {
    const engine::DeviceSpec search_device = run::LrSearchDevice(f.engine.devices, ranks->size());
    // --algo slide searches with its sampled step; --cpu-output sampled with the dense step, whose
    // rate the run's dense devices take (its sampled devices scale it, ScaleLearningRate).
    const run::LrSearchResult search = run::SearchLearningRate(
        train, shape, f.options, search_device,
        f.algo == "slide" ? f.engine.sampled_output : engine::SampledOutputOptions{});
    lr_search_json = ReportLrSearch(search, search_device, writer);
    f.options.lr = float(search.picked);
    if (const int signal = stopped_before_training("while --lr auto searched")) return 128 + signal;
  }
  ScaleLearningRate(f, lr_scaling, resumed_lr);
  kernels::Model<float> model = kernels::InitModel<float>(shape, f.options.seed);
  if (writer)
    std::cerr << "model " << shape.ToString() << " (" << shape.NumParameters() << " parameters), "
              << train.num_rows() << " training rows, loaded in " << load_seconds << " s; planned host memory "
              << ((planned_host_bytes + (1 << 20) - 1) >> 20) << " MiB"
              << (ranks->size() > 1 ? " on rank 0 (the most of any rank: it alone writes checkpoints)" : "")
              << "; training on "
              << engine::DeviceListText(f.engine.devices) << " (" << engine::CudaDeviceSummary()
              << (ranks->size() > 1 ? " on rank 0; " + std::to_string(ranks->size()) + " ranks" : std::string())
              << ")\n";
  const bool cpu_devices =
      std::any_of(f.engine.devices.begin(), f.engine.devices.end(),
                  [](const engine::DeviceSpec& spec) { return spec.kind == engine::DeviceKind::kCpu; });
  if (writer)
    std::cerr << "step: SGD at lr " << f.options.lr << " (" << f.lr_schedule << "), local momentum "
              << f.options.local_momentum << "; first layer "
              << (f.options.input_lr > 0 ? "Adagrad at " + std::to_string(f.options.input_lr) : std::string("the same"))
              << "; dropout " << f.options.dropout << "; weight decay " << f.options.weight_decay
              << "; output products in " << kernels::OutputMathName(f.options.math)
              << (f.options.math == kernels::OutputMath::kBf16 && cpu_devices ? " (" + kernels::cpu::Bf16Isa() + ")" : "")
              << "\n";

  const bool show_progress = writer && session.print && ::isatty(::fileno(stderr)) != 0;
  run::TrainCallbacks callbacks;
  callbacks.on_resume = [&](const std::vector<run::EvalRecord>& earlier) { metrics.Restart(earlier); };
  callbacks.on_event = [&](const std::string& text) {
    if (!writer) return;
    if (show_progress) std::cerr << "\r\033[K";
    std::cerr << text << "\n";
  };
  std::string stdout_error;  // why stdout could not be written, once it could not
  callbacks.on_eval = [&](const run::EvalRecord& record) {
    if (!writer) return;
    if (show_progress) std::cerr << "\r\033[K";
    if (session.print) PrintEval(record);
    metrics.Append(record);
    if (session.on_eval) session.on_eval(record);
    if (!session.print || !stdout_error.empty()) return;
    stdout_error = StdoutError();
    // A run that can no longer report stops at its next safe point when a checkpoint keeps its
    // progress. Without one, stopping would lose the whole run: it trains on to write its model
    // and metrics files, and fails at the end.
    if (!stdout_error.empty() && !f.control.checkpoint_dir.empty()) StopSignals::Request(SIGPIPE);
  };
  if (session.on_progress) {
    callbacks.on_progress = session.on_progress;
  } else if (show_progress) {
    callbacks.on_progress = [last = Clock::now()](uint64_t done, uint64_t total, double loss) mutable {
      if (Clock::now() - last < std::chrono::milliseconds(200) && done < total) return;
      last = Clock::now();
      std::fprintf(stderr, "\r\033[K%5.1f%%  batch loss %.4f", 100.0 * double(done) / double(total), loss);
    };
  }
  f.control.stop_signal = &signals.requested();
  // A resumed run's log restarts from the checkpoint's records once the checkpoint is accepted.
  if (f.control.resume_dir.empty()) metrics.Begin();
  const run::TrainResult result = [&] {
    try {
      return run::RunMultiDevice(train, test.get(), f.options, f.engine, &model, callbacks, f.control);
    } catch (const run::RunStopped& e) {
      // "A lower --lr" is the advice for a rate too high; for raw values this large the data is the
      // cause, and --normalize, which a resume cannot change, the fix.
      if (e.why() == run::RunStopped::Why::kDiverged && largest_raw_value > kLargeRawValue) {
        std::ostringstream text;
        text << e.what() << ": the training rows hold feature values up to " << largest_raw_value
             << " and --normalize none passes them on as they are; a new run with --normalize l2 (the default) "
                "trains on rows of unit length";
        throw std::runtime_error(text.str());
      }
      throw;
    }
  }();
  session.stopped_by_signal = result.stopped_by_signal;
  session.checkpoint = result.checkpoint;
  if (result.stopped_by_signal != 0) {
    // An unfinished run: no model file, the metrics stay FILE.partial.
    const std::string go_on = result.checkpoint.empty() ? std::string("no --checkpoint-dir, so the progress is lost")
                                                        : "resume with --resume " + f.control.checkpoint_dir;
    // The stop this run asked for itself (a real SIGPIPE is ignored while training).
    if (!stdout_error.empty() && result.stopped_by_signal == SIGPIPE) {
      std::cerr << "error: " << stdout_error << "; the run stopped at a safe point; " << go_on << "\n";
      return kExitFailure;
    }
    if (writer && session.print) std::cerr << "stopped by signal " << result.stopped_by_signal << "; " << go_on << "\n";
    return 128 + result.stopped_by_signal;
  }
  if (!f.model_out.empty()) engine::SaveModel(model, f.model_out);
  metrics.Finish();
  if (!writer) return kExitOk;

  nlohmann::json summary = TrainSummary(shape, result, load_seconds, test != nullptr);
  // What the virtual clock charged, and where that came from: its times compare only between
  // runs that charged the same.
  if (f.engine.clock == scheduler::EngineOptions::Clock::kVirtual)
    summary["virtual_clock"] = {{"row_cost_s", result.row_cost_s},
                                {"merge_cost_s", result.merge_cost_s},
                                {"costs", f.engine.row_cost_s > 0 && f.engine.merge_cost_s > 0 ? "given"
                                          : f.engine.measure_clock_costs                         ? "measured"
                                                                                                 : "model"}};
  if (!f.model_out.empty()) summary["model"] = f.model_out;
  if (!result.checkpoint.empty()) summary["checkpoint"] = result.checkpoint;
  if (!result.end_checkpoint_error.empty()) summary["checkpoint_error"] = result.end_checkpoint_error;
  if (!lr_search_json.is_null()) summary["lr_search"] = lr_search_json;
  summary["merge_on"] = scheduler::MergesOnGpus(f.engine) ? "gpus" : "host";
  // The CPU step's vector kernels: XMLT_CPU_ISA's, or the widest this CPU runs.
  summary["cpu_isa"] = kernels::cpu::CpuIsaName(kernels::cpu::ActiveCpuIsa());
  // Which devices stepped with the sampled output layer, and so without local momentum.
  if (f.algo != "slide" && f.engine.sampled_output.enabled) {
    summary["cpu_output"] = "sampled";
    nlohmann::json sampled = nlohmann::json::array();
    for (const engine::DeviceSpec& spec : f.engine.devices)
      if (spec.kind == engine::DeviceKind::kCpu) sampled.push_back(spec.id);
    summary["sampled_devices"] = sampled;
  }
  session.summary = summary;
  if (session.model != nullptr) *session.model = std::move(model);
  if (!session.print) return kExitOk;  // the summary names a failed end-of-run checkpoint
  WriteStdout(summary.dump() + "\n");
  if (stdout_error.empty()) stdout_error = StdoutError();
  if (!stdout_error.empty()) std::cerr << "error: " << stdout_error << "; the model and metrics files were written\n";
  if (!result.end_checkpoint_error.empty()) {
    std::cerr << "error: the end-of-run checkpoint failed (" << result.end_checkpoint_error
              << "); the model and metrics were written\n";
  }
  return stdout_error.empty() && result.end_checkpoint_error.empty() ? kExitOk : kExitFailure;
}

}  // namespace

}  // namespace xmlt::apps
