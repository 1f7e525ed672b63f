// One `xmltrain train` run from its parsed flags; see train_run.h. It plans the run from the flags
// before the data is loaded, between the training and the test rows, and after
// (plan_around_loading.h), claims its outputs (train_outputs.h), loads the data (train_data.h),
// sets the learning rate (learning_rate_step.h), then trains from the plan alone and says what it
// did (train_report.h).
#include "apps/train_run.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>
#include <stdexcept>
#include <string>

#include "apps/cli.h"
#include "apps/learning_rate_step.h"
#include "apps/plan_around_loading.h"
#include "apps/progress_line.h"
#include "apps/progress_throttle.h"
#include "apps/rank_agreement.h"
#include "apps/setting_flags.h"
#include "apps/stdout_check.h"
#include "apps/stop_signals.h"
#include "apps/stop_texts.h"
#include "apps/train_data.h"
#include "apps/train_outputs.h"
#include "apps/train_plan.h"
#include "apps/train_ranker.h"
#include "apps/train_report.h"
#include "apps/train_settings.h"
#include "data/folder_lock.h"
#include "data/input_error.h"
#include "engine/model_file.h"
#include "ranks/rank_group.h"
#include "run/metrics_log.h"
#include "run/multi_device_run.h"
#include "run/one_device_run.h"

namespace xmlt::apps {
namespace {

// Beyond any count or tf-idf weight: unnormalized values this large make the first steps explode
// whatever the learning rate.
constexpr float kLargeRawValue = 1e4f;

int RunTrainOnRanks(const TrainFlags& f, ranks::RankGroup* ranks, TrainSession& session);

}  // namespace

int RunTrain(const TrainFlags& f, TrainSession& session) {
  if (!(f.rank_timeout_s > 0)) throw std::invalid_argument("--rank-timeout must be positive");
  std::unique_ptr<ranks::RankGroup> ranks =
      xmlt::ranks::JoinRankGroup(std::chrono::milliseconds(int64_t(std::min(f.rank_timeout_s, 1e9) * 1000)));
  if (ranks->size() <= 1) return RunTrainOnRanks(f, ranks.get(), session);
  // A stop under mpirun is SIGUSR1, forwarded to every rank. A rank other than 0 whose part has
  // ended waits in MPI_Finalize for rank 0's ranker stage; the default action would kill it there,
  // and mpirun would then kill rank 0 before it wrote the trained MLP. Ignored from the start, the
  // run's handlers take it while the rank trains and put the ignore back when its part ends.
  if (ranks->rank() != 0) std::signal(SIGUSR1, SIG_IGN);
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

// Trains `model` on the loaded data, with every rank of `ranks`; rank 0 (`writer`) logs each
// evaluation to `metrics` and says it, with the progress on a terminal. `stdout_error` receives why
// stdout could not be written, once it could not.
run::TrainResult TrainTheMlp(const TrainPlan& plan, TrainSession& session, const TrainingData& data,
                             ranks::RankGroup* ranks, StopSignals& signals, run::MetricsLog& metrics,
                             kernels::Model<float>* model, std::string* stdout_error) {
  const bool writer = ranks->rank() == 0;
  using Clock = std::chrono::steady_clock;
  const bool show_progress = writer && session.print && ::isatty(::fileno(stderr)) != 0;
  run::TrainCallbacks callbacks;
  // A metrics file that cannot be written (a full disk) is said once, and the run trains on: its
  // model and checkpoint matter more than its log. The run fails at the end, once they are written.
  auto say_if_metrics_failed = [&metrics, said = false]() mutable {
    if (said || metrics.error().empty()) return;
    said = true;
    std::cerr << "warning: " << metrics.error()
              << "; training goes on without its metrics file, writes its model and checkpoint, and ends in an "
                 "error\n";
  };
  callbacks.on_resume = [&](const std::vector<run::EvalRecord>& earlier) {
    metrics.Restart(earlier);
    say_if_metrics_failed();
  };
  callbacks.on_event = [&](const std::string& text) {
    if (!writer) return;
    if (show_progress) std::cerr << "\r\033[K";
    std::cerr << text << "\n";
  };
  callbacks.on_eval = [&](const run::EvalRecord& record) {
    if (!writer) return;
    if (show_progress) std::cerr << "\r\033[K";
    if (session.print) PrintEval(record, plan.scheduling.clock == scheduler::SchedulerOptions::Clock::kVirtual);
    metrics.Append(record);
    say_if_metrics_failed();
    if (session.on_eval) session.on_eval(record);
    if (!session.print || !stdout_error->empty()) return;
    *stdout_error = StdoutError();
    // A run that can no longer report stops at its next safe point when a checkpoint keeps its
    // progress. Without one, stopping would lose the whole run: it trains on to write its model
    // and metrics files, and fails at the end.
    if (!stdout_error->empty() && !plan.control.checkpoint_dir.empty()) signals.Request(SIGPIPE);
  };
  if (session.on_progress) {
    callbacks.on_progress = session.on_progress;
  } else if (show_progress) {
    callbacks.on_progress = [start = Clock::now(), throttle = std::make_shared<ProgressThrottle>()](
                                uint64_t done, uint64_t total, double loss) {
      if (!throttle->Due(done, total)) return;
      const double elapsed = std::chrono::duration<double>(Clock::now() - start).count();
      std::fprintf(stderr, "\r\033[K%s", ProgressLine(done, total, loss, elapsed).c_str());
    };
  }
  run::RunControl control = plan.control;
  control.stop_signal = &signals.requested();
  if (plan.holdout_stop) control.stop_holdout = data.holdout.get();
  // A resumed run's log restarts from the checkpoint's records once the checkpoint is accepted.
  if (control.resume_dir.empty()) metrics.Begin();
  try {
    // The engine takes the group only across ranks (null: one process owns every device).
    return run::RunMultiDevice(data.train, data.test.get(), plan.options, plan.scheduling, model, callbacks, control,
                               ranks->size() > 1 ? ranks : nullptr);
  } catch (const run::RunStopped& e) {
    // "A lower --lr" is the advice for a rate too high; for raw values this large the data is the
    // cause, and --normalize, which a resume cannot change, the fix.
    if (e.why() == run::RunStopped::Why::kDiverged && data.largest_raw_value > kLargeRawValue) {
      std::ostringstream text;
      text << e.what() << ": the training rows hold feature values up to " << data.largest_raw_value
           << " and --normalize none passes them on as they are; a new run with --normalize l2 (the default) "
              "trains on rows of unit length";
      throw std::runtime_error(text.str());
    }
    throw;
  }
}

// A run a signal stopped (or its own stop, once stdout could not be written): no model file, the
// metrics stay FILE.partial. Returns its exit code.
int EndStoppedRun(const TrainPlan& plan, const TrainSession& session, const run::TrainResult& result,
                  const std::string& stdout_error, bool writer) {
  const std::string checkpoint_dir = result.checkpoint.empty() ? std::string() : plan.control.checkpoint_dir;
  // The stop this run asked for itself (a real SIGPIPE is ignored while training).
  if (!stdout_error.empty() && result.stopped_by_signal == SIGPIPE) {
    std::cerr << "error: " << stdout_error << "; the run stopped at a safe point; "
              << ResumeAdvice(checkpoint_dir, kCliWording) << "\n";
    return kExitFailure;
  }
  if (writer && session.print)
    std::cerr << StoppedInTrainingText(result.stopped_by_signal, checkpoint_dir, kCliWording) << "\n";
  return 128 + result.stopped_by_signal;
}

// A run a signal stopped in the ranker stage, after training: the trained MLP is kept. --model
// gets it alone (as --ranker off writes it) and the metrics file, whose evaluations are all there,
// is finished; the end-of-training checkpoint holds the same MLP, and --resume fits the ranker.
// Returns the exit code, 128 + the signal.
int EndStoppedStage(const TrainPlan& plan, TrainSession& session, engine::TrainedModel mlp, run::MetricsLog& metrics,
                    int signal) {
  session.stopped_by_signal = signal;
  session.stopped_in_ranker_stage = true;
  if (session.model != nullptr) *session.model = mlp;
  if (!plan.model_out.empty()) engine::SaveModel(mlp, plan.model_out);
  metrics.Finish();
  if (session.print) {
    const std::string kept = plan.model_out.empty() ? std::string("the trained MLP is in no file without --model")
                                                    : plan.model_out + " holds the trained MLP without its ranker";
    const std::string checkpoint_dir = session.checkpoint.empty() ? std::string() : plan.control.checkpoint_dir;
    std::cerr << StoppedInRankerStageText(signal, kept, checkpoint_dir, kCliWording) << "\n";
  }
  return 128 + signal;
}

// The metrics file finished (FILE.partial renamed to FILE); why it could not be, or empty.
std::string FinishMetrics(run::MetricsLog& metrics) {
  try {
    metrics.Finish();
  } catch (const std::exception& e) {
    return e.what();
  }
  return {};
}

// The summary on stdout. Returns the exit code: a failure when stdout, the metrics file or the
// end-of-run checkpoint could not be written, said on stderr.
int PrintSummary(const nlohmann::json& summary, const run::TrainResult& result, std::string stdout_error,
                 const std::string& metrics_error) {
  WriteStdout(summary.dump() + "\n");
  if (stdout_error.empty()) stdout_error = StdoutError();
  const char* written = metrics_error.empty() ? "the model and metrics files were written" : "the model was written";
  if (!stdout_error.empty()) std::cerr << "error: " << stdout_error << "; " << written << "\n";
  if (!metrics_error.empty())
    std::cerr << "error: " << metrics_error << "; the model was written"
              << (result.checkpoint.empty()
                      ? ""
                      : ", and the checkpoint holds every evaluation (--resume with a --metrics that can be "
                        "written writes them)")
              << "\n";
  if (!result.end_checkpoint_error.empty()) {
    std::cerr << "error: the end-of-run checkpoint failed (" << result.end_checkpoint_error << "); " << written
              << "\n";
  }
  const bool failed = !stdout_error.empty() || !metrics_error.empty() || !result.end_checkpoint_error.empty();
  return failed ? kExitFailure : kExitOk;
}

// The run once it is planned: the model made, trained with every rank of `ranks`, the ranker
// fitted on rank 0, and the outputs written; returns the exit code. Reads the plan alone for what
// the run does, the flags only for what was given as it was (the step's --lr-schedule, the
// algorithm's name).
int TrainAsPlanned(const TrainFlags& f, const TrainPlan& plan, ranks::RankGroup* ranks, TrainSession& session,
                   StopSignals& signals, const TrainingData& data, const nlohmann::json& lr_search,
                   run::MetricsLog& metrics) {
  const bool writer = ranks->rank() == 0;
  kernels::Model<float> model = kernels::InitModel<float>(plan.shape, plan.options.seed);
  if (writer) SayModelAndStep(f, plan, data, ranks->size());

  std::string stdout_error;  // why stdout could not be written, once it could not
  const run::TrainResult result = TrainTheMlp(plan, session, data, ranks, signals, metrics, &model, &stdout_error);
  session.stopped_by_signal = result.stopped_by_signal;
  session.checkpoint = result.checkpoint;
  if (result.stopped_by_signal != 0) return EndStoppedRun(plan, session, result, stdout_error, writer);
  // The ranker is fitted on rank 0, which writes the model and the metrics (the other ranks have
  // neither: apps/train_algorithm.cc); their part ends here.
  if (!writer) {
    metrics.Finish();
    return kExitOk;
  }
  // A stop in the stage ends it within seconds: a signal, or what this run asked for (a callback
  // that raised). Not a stdout that failed at the last evaluation: the model and metrics files are
  // still written, and the summary says what failed (PrintSummary).
  const auto stage_stopped = [&signals] {
    const int signal = signals.requested().load();
    return signal != 0 && signal != SIGPIPE;
  };
  RankerOutcome ranked = FitRanker(plan, data, std::move(model), session.print, stage_stopped, &signals.requested());
  if (ranked.stopped)
    return EndStoppedStage(plan, session, std::move(ranked.model), metrics, signals.requested().load());
  session.summary = TrainSummary(f, plan, data, result, lr_search);
  AddRankerSummary(plan, ranked, &session.summary);
  // The trained model is the caller's before its files are written: an error writing them (a full
  // disk) must not lose it (Python raises with the model attached).
  engine::TrainedModel& trained =
      session.model != nullptr ? (*session.model = std::move(ranked.model)) : ranked.model;
  session.trained = true;
  if (!plan.model_out.empty()) engine::SaveModel(trained, plan.model_out);
  const std::string metrics_error = FinishMetrics(metrics);
  if (!session.print) {  // the summary names a failed end-of-run checkpoint
    if (!metrics_error.empty()) throw std::runtime_error(metrics_error);
    return kExitOk;
  }
  return PrintSummary(session.summary, result, stdout_error, metrics_error);
}

int RunTrainOnRanks(const TrainFlags& f, ranks::RankGroup* ranks, TrainSession& session) {
  const bool writer = ranks->rank() == 0;
  TrainPlan plan = PlanBeforeLoading(f, ranks);
  // Held until the run ends: one run at a time writes a checkpoint folder.
  const std::unique_ptr<data::FolderLock> checkpoint_lock = ClaimTrainOutputs(f, plan, session, writer);
  // From here a signal asks for a stop: before training (loading, the --lr auto search) it is
  // taken at the next step with a message, and a second one exits at once, as in training.
  StopSignals signals(session.second_signal_exits);
  session.stop = &signals;
  struct StopShown {  // until `signals` ends, however the run ends
    TrainSession& session;
    ~StopShown() { session.stop = nullptr; }
  } stop_shown{session};
  const auto stopped_before_training = [&](const char* during) {
    const int signal = signals.requested().load();
    session.stopped_by_signal = signal;
    if (signal != 0 && writer && session.print)
      std::cerr << "stopped by signal " << signal << " " << during << ", before training began: nothing was trained\n";
    return signal;
  };
  const std::unique_ptr<run::MetricsLog> metrics = OpenMetricsLog(plan.metrics);

  TrainingData data = LoadTrainingRows(f, session, ranks);
  // The training rows alone decide the model's shape; the test rows are read as its input.
  PlanShape(f, data.train, &plan);
  LoadTestRows(f, session, ranks, plan, &data);
  // After the test rows' propensities, which come from every training row, as eval --train takes
  // them; rank 0 decides for all ranks whether a ranker fits.
  HoldOutRankerRows(&data, ranks, &plan);
  PlanAfterLoading(f, ranks, data, &plan);
  const LearningRateStep rate = SetLearningRate(f, ranks, data, stopped_before_training, &plan);
  if (rate.stopped_by_signal != 0) return 128 + rate.stopped_by_signal;
  return TrainAsPlanned(f, plan, ranks, session, signals, data, rate.lr_search, *metrics);
}

}  // namespace

}  // namespace xmlt::apps
