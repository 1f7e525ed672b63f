// `xmltrain train`: loads the data, trains the model, logs metrics, saves the model.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>

#include "apps/checkpoint_folder.h"
#include "apps/cli.h"
#include "apps/fault_flag.h"
#include "apps/output_paths.h"
#include "apps/propensity_flag.h"
#include "apps/rank_agreement.h"
#include "apps/setting_flags.h"
#include "apps/stdout_check.h"
#include "apps/stop_signals.h"
#include "apps/train_presets.h"
#include "data/folder_lock.h"
#include "data/input_error.h"
#include "dist/rank_group.h"
#include "data/row_normalization.h"
#include "engine/device_query.h"
#include "engine/device_spec.h"
#include "engine/heterogeneity.h"
#include "engine/model_file.h"
#include "kernels/cpu/bf16_gemm.h"
#include "kernels/propensity.h"
#include "run/checkpoint_file.h"
#include "run/multi_device_run.h"
#include "run/lr_search.h"
#include "scheduler/memory_limit.h"
#include "scheduler/memory_plan.h"
#include "run/run_progress.h"
#include "run/trainer.h"

namespace xmlt::apps {
namespace {

struct TrainFlags {
  std::string train, train_labels, test, test_labels, metrics, model_out;
  std::string hidden = "128";
  std::string eval_every = "epoch";
  std::string normalize = "l2";
  std::string final_eval = "full";
  std::string math = "fp32";
  std::string lr = "0.3";
  std::string preset = "default", lr_scaling, pert_weights;  // the last two: from the preset unless given
  std::string propensity = "0.55,1.5";
  std::string algo = "single", clock = "virtual";
  // Parsed once, in ApplyAlgorithm, into the typed fields of `engine`.
  std::string devices = "cpu:4", speed, hetero = "none", collective = "ring";
  scheduler::EngineOptions engine;
  std::string schedule = "dynamic", merge = "normalized", momentum_mode = "heavy";
  CLI::App* command = nullptr;
  bool given(const char* flag) const { return command->count(flag) > 0; }
  DataFlags data;
  scheduler::TrainOptions options;
  scheduler::RunControl control;
  std::vector<std::string> faults;
  double rank_timeout_s = 1800;  // across MPI ranks: how long a rank waits for the others
};

std::vector<uint32_t> ParseHidden(const std::string& text) {
  std::vector<uint32_t> sizes;
  std::stringstream stream(text);
  std::string item;
  while (std::getline(stream, item, ',')) {
    size_t used = 0;
    unsigned long value = 0;
    try {
      value = std::stoul(item, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used != item.size() || value == 0 || value > 65536)
      throw std::invalid_argument("--hidden: '" + item + "' is not a layer size in 1..65536");
    sizes.push_back(uint32_t(value));
  }
  // getline drops a trailing empty item: "8," would read as "8".
  if (!text.empty() && text.back() == ',') throw std::invalid_argument("--hidden: '" + text + "' ends with a comma");
  if (sizes.empty()) throw std::invalid_argument("--hidden needs at least one layer size");
  return sizes;
}

scheduler::EvalSchedule ParseEvalEvery(const std::string& text) {
  scheduler::EvalSchedule schedule;
  if (text == "epoch") return schedule;
  if (text == "end" || text == "0") {
    schedule.kind = scheduler::EvalSchedule::Kind::kEnd;
    return schedule;
  }
  size_t used = 0;
  unsigned long value = 0;
  try {
    value = std::stoul(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used != text.size() || value == 0 || value > 1000000)
    throw std::invalid_argument("--eval-every must be 'epoch', 'end' or a number of mega-batches");
  schedule.kind = scheduler::EvalSchedule::Kind::kEveryMegaBatches;
  schedule.mega_batches = uint32_t(value);
  return schedule;
}

void PrintEval(const scheduler::EvalRecord& r) {
  char line[512];
  int used = std::snprintf(line, sizeof line, "epoch %6.2f  megabatch %4llu  train %7.2fs  loss %.4f", r.epoch,
                           static_cast<unsigned long long>(r.megabatch), r.train_time_s, r.train_loss);
  if (r.test.rows > 0) {
    used += std::snprintf(line + used, sizeof line - size_t(used),
                          "  test loss %.4f  P@1 %.4f  P@3 %.4f  P@5 %.4f  nDCG@3 %.4f  nDCG@5 %.4f", r.test.loss,
                          r.test.metrics.p1, r.test.metrics.p3, r.test.metrics.p5, r.test.metrics.ndcg3,
                          r.test.metrics.ndcg5);
    if (r.test.metrics.propensity_scored)
      used += std::snprintf(line + used, sizeof line - size_t(used), "  PSP@1 %.4f  PSP@5 %.4f", r.test.metrics.psp1,
                            r.test.metrics.psp5);
  }
  WriteStdout(std::string(line) + "\n");
}

// Beyond any count or tf-idf weight: unnormalized values this large make the first steps explode
// whatever the learning rate.
constexpr float kLargeRawValue = 1e4f;

float LargestMagnitude(const data::CsrMatrix& features) {
  float largest = features.nnz() > 0 && features.binary() ? 1.0f : 0.0f;
  for (float v : features.values) largest = std::max(largest, std::fabs(v));
  return largest;
}

// --algo presets set how batches are dispatched and merged; --schedule, --merge and
// --local-momentum given explicitly override them, so any combination can be swept.
void ApplyAlgorithm(TrainFlags& f) {
  f.engine.devices = engine::ParseDeviceList(f.devices);
  f.engine.heterogeneity = engine::ParseHetero(f.hetero);
  f.engine.heterogeneity.speed = engine::ParseSpeeds(f.speed);
  try {
    f.engine.collective = merge::ParseCollectiveKind(f.collective);
  } catch (const std::invalid_argument& e) {
    throw std::invalid_argument(std::string("--collective: ") + e.what());
  }
  using Engine = scheduler::EngineOptions;
  if (f.clock == "wall") {
    f.engine.clock = Engine::Clock::kWall;
  } else if (f.clock == "virtual") {
    f.engine.clock = Engine::Clock::kVirtual;
  } else {
    throw std::invalid_argument("--clock must be wall or virtual");
  }
  if (f.momentum_mode == "heavy" || f.momentum_mode == "nesterov") {
    f.engine.nesterov = f.momentum_mode == "nesterov";
  } else {
    throw std::invalid_argument("--momentum-mode must be heavy or nesterov");
  }
  std::string schedule, merge;
  bool plain_local_sgd = false;  // the synchronous algorithms step each replica with plain SGD
  if (f.algo == "single") {
    // The engine with one device, of any kind: the CPU unless --devices names another.
    if (f.given("--devices") && f.engine.devices.size() != 1)
      throw std::invalid_argument("--algo single trains on one device; use --algo adaptive, elastic, adasum, "
                                  "sync or crossbow for " + f.devices);
    f.engine = scheduler::SingleDeviceEngine(f.given("--devices") ? f.engine.devices[0] : engine::DeviceSpec{});
    return;
  } else if (f.algo == "adaptive") {
    schedule = "dynamic", merge = "normalized";
  } else if (f.algo == "elastic") {
    schedule = "static", merge = "average";
  } else if (f.algo == "adasum") {
    schedule = "static", merge = "adasum";
  } else if (f.algo == "sync") {
    schedule = "sync", merge = "gradient", plain_local_sgd = true;
  } else if (f.algo == "crossbow") {
    schedule = "sync", merge = "crossbow", plain_local_sgd = true;
  } else {
    throw std::invalid_argument("--algo must be single, adaptive, elastic, adasum, sync or crossbow");
  }
  if (f.given("--schedule")) schedule = f.schedule;
  if (f.given("--merge")) merge = f.merge;
  (void)plain_local_sgd;  // the presets set the local momentum (ApplyPreset)

  if (schedule == "dynamic") {
    f.engine.schedule = Engine::Schedule::kDynamic;
  } else if (schedule == "static") {
    f.engine.schedule = Engine::Schedule::kStatic;
  } else if (schedule == "sync") {
    f.engine.schedule = Engine::Schedule::kSync;
  } else {
    throw std::invalid_argument("--schedule must be dynamic, static or sync");
  }
  f.engine.scale_batches = f.engine.schedule == Engine::Schedule::kDynamic;
  if (merge == "normalized") {
    f.engine.merge = Engine::Merge::kNormalized;
  } else if (merge == "average") {
    f.engine.merge = Engine::Merge::kAverage;
  } else if (merge == "adasum") {
    f.engine.merge = Engine::Merge::kAdasum;
  } else if (merge == "crossbow") {
    f.engine.merge = Engine::Merge::kCrossbow;
  } else if (merge == "gradient") {
    f.engine.merge = Engine::Merge::kGradient;
  } else {
    throw std::invalid_argument("--merge must be normalized, average, adasum, crossbow or gradient");
  }
}

// A positive finite number, or std::invalid_argument naming the flag.
float ParsePositive(const char* flag, const std::string& text) {
  size_t used = 0;
  float value = 0;
  try {
    value = std::stof(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used != text.size() || !(value > 0) || !std::isfinite(value))
    throw std::invalid_argument(std::string(flag) + " must be a positive number or 'auto', not '" + text + "'");
  return value;
}

// Flags that need no data are checked before the data is loaded (minutes at full size): the
// training options as given, the multi-device ones, and flags that --algo single would ignore.
void CheckFlagsBeforeLoading(TrainFlags& f) {
  scheduler::ValidateTrainOptions(f.options);
  if (f.algo == "single") {
    for (const char* flag : {"--speed", "--hetero", "--clock", "--row-cost", "--merge-cost", "--batch-min", "--beta",
                             "--momentum", "--pert-thr", "--pert-delta", "--pert-weights", "--schedule", "--merge",
                             "--collective", "--momentum-mode", "--elastic-alpha", "--lr-scaling", "--preset"})
      if (f.given(flag))
        throw std::invalid_argument(std::string(flag) + " applies to several devices and --algo single would ignore "
                                    "it: drop it, or choose --algo adaptive, elastic, adasum, sync or crossbow");
    return;
  }
  if (f.preset != "default" && f.preset != "paper")
    throw std::invalid_argument("--preset must be default or paper, not '" + f.preset + "'");
  if (f.given("--lr-scaling")) ParseLrScaling(f.lr_scaling);
  if (f.given("--pert-weights") && f.pert_weights != "normalized" && f.pert_weights != "raw")
    throw std::invalid_argument("--pert-weights must be normalized or raw, not '" + f.pert_weights + "'");
  scheduler::ValidateEngineOptions(f.engine);
  if (f.engine.batch_min > double(f.options.batch)) {
    std::ostringstream text;
    text << "--batch-min " << f.engine.batch_min << " is above --batch " << f.options.batch << " (b_max)";
    throw std::invalid_argument(text.str());
  }
}

// For unsigned flags: CLI11 would wrap "-1" to 2^64 - 1. No description, so that --help keeps
// showing the plain type and default.
const CLI::Validator kNotNegative(
    [](std::string& value) {
      const size_t first = value.find_first_not_of(" \t");
      return first != std::string::npos && value[first] == '-' ? std::string("must not be negative") : std::string();
    },
    "", "");

// --math: refused here, before the data is loaded, where this build, CPU or device list cannot do
// it. GPUs take fp32, tf32 and bf16 (cuBLAS's compute types); CPUs fp32, and bf16 where they have
// native bf16.
kernels::OutputMath ParseOutputMath(const std::string& text, const std::vector<engine::DeviceSpec>& devices) {
  if (text == "fp32") return kernels::OutputMath::kFp32;
  if (text != "bf16" && text != "tf32")
    throw std::invalid_argument("--math must be fp32, bf16 or tf32, not '" + text + "'");
  const auto cpu = std::find_if(devices.begin(), devices.end(),
                                [](const engine::DeviceSpec& spec) { return spec.kind == engine::DeviceKind::kCpu; });
  if (text == "tf32") {
    if (cpu != devices.end())
      throw std::invalid_argument("--math tf32 is for CUDA devices; " + cpu->id + " computes in fp32 or bf16");
    return kernels::OutputMath::kTf32;
  }
  if (cpu != devices.end()) {
    std::string why;
    if (!kernels::cpu::Bf16Available(&why)) throw std::invalid_argument("--math bf16 on " + cpu->id + ": " + why);
    std::cerr << "output layer products in bf16 on " << kernels::cpu::Bf16Isa()
              << (kernels::cpu::Bf16HasTiles() ? "" : " (no AMX tiles: no faster than fp32 here)") << "\n";
  }
  return kernels::OutputMath::kBf16;
}

// The multi-device knobs the user left unset, from --preset; returns how the learning rate scales
// with the device count (ScaleLearningRate applies it once the base rate is known).
LrScaling ApplyPreset(TrainFlags& f, uint64_t training_rows) {
  if (f.algo == "single") return LrScaling::kNone;
  const size_t devices = f.engine.devices.size();
  const uint64_t batches_per_epoch = (training_rows + f.options.batch - 1) / f.options.batch;
  const PresetValues values =
      f.preset == "paper" ? PaperPreset(f.algo) : DefaultPreset(f.algo, devices, batches_per_epoch);
  if (!f.given("--momentum")) f.engine.momentum = values.momentum;
  if (!f.given("--local-momentum")) f.options.local_momentum = values.local_momentum;
  if (!f.given("--mega-batch")) f.options.mega_batch = values.mega_batch;
  const LrScaling scaling = f.given("--lr-scaling") ? ParseLrScaling(f.lr_scaling) : values.lr_scaling;
  // Their spellings were checked before loading (CheckFlagsBeforeLoading).
  f.engine.pert_renormalize = f.given("--pert-weights") ? f.pert_weights == "normalized" : values.pert_renormalize;
  return scaling;
}

// --lr (given or found) is for one device's batch; several devices train with it scaled. Said on
// stderr with the preset's values, so that every run shows what it trains with.
void ScaleLearningRate(TrainFlags& f, LrScaling scaling) {
  if (f.algo == "single") return;
  const size_t devices = f.engine.devices.size();
  const float base_lr = f.options.lr;
  f.options.lr = float(double(base_lr) * LrScale(scaling, devices));
  if (f.engine.ranks != nullptr && f.engine.ranks->rank() != 0) return;  // rank 0 speaks for the run
  std::cerr << "preset " << f.preset << " for " << f.algo << " on " << devices << " devices: --momentum "
            << f.engine.momentum << " --local-momentum " << f.options.local_momentum << " --mega-batch "
            << f.options.mega_batch << " --lr " << f.options.lr << " (" << base_lr << " scaled "
            << LrScalingName(scaling) << ") --pert-weights " << (f.engine.pert_renormalize ? "normalized" : "raw")
            << "\n";
}

// Under an MPI launcher one run spans every rank: --devices names each rank's own devices, the run
// has all of them, rank after rank (--speed and --hetero cover them all, in that order), and rank
// 0 alone writes the metrics, the model, the checkpoints and the summary.
void SpreadOverRanks(TrainFlags& f, dist::RankGroup* ranks) {
  if (ranks->size() <= 1) return;
  // The default --algo is one device in one process; say so rather than count the ranks' devices.
  if (f.algo == "single")
    throw std::invalid_argument("--algo single trains one device in one process; a run over " +
                                std::to_string(ranks->size()) +
                                " MPI ranks needs a multi-device --algo (adaptive, elastic, adasum, sync, crossbow)");
  f.engine.devices = engine::DevicesOfRanks(f.engine.devices, ranks->size(), &f.engine.device_rank);
  f.engine.ranks = ranks;
  if (ranks->rank() != 0) {
    f.model_out.clear();
    f.metrics.clear();
  }
}

int RunTrainOnRanks(TrainFlags& f, dist::RankGroup* ranks);

int RunTrain(TrainFlags& f) {
  if (!(f.rank_timeout_s > 0)) throw std::invalid_argument("--rank-timeout must be positive");
  std::unique_ptr<dist::RankGroup> ranks =
      dist::JoinRankGroup(std::chrono::milliseconds(int64_t(std::min(f.rank_timeout_s, 1e9) * 1000)));
  if (ranks->size() <= 1) return RunTrainOnRanks(f, ranks.get());
  try {
    return RunTrainOnRanks(f, ranks.get());
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
    if (const auto* mismatch = dynamic_cast<const scheduler::RunMismatch*>(&e)) why = DescribeInFlags(*mismatch);
    if (const auto* stopped = dynamic_cast<const scheduler::RunStopped*>(&e)) why = DescribeInFlags(*stopped);
    ranks->Abort(why, usage ? kExitBadInput : kExitFailure);
  }
  return kExitFailure;  // not reached: Abort ends the process
}

int RunTrainOnRanks(TrainFlags& f, dist::RankGroup* ranks) {
  using Clock = std::chrono::steady_clock;
  ApplyAlgorithm(f);
  SpreadOverRanks(f, ranks);
  const bool writer = ranks->rank() == 0;
  CheckFlagsBeforeLoading(f);
  for (const std::string& fault : f.faults) f.control.faults.push_back(ParseFaultInjection(fault));
  // Checked now, not once the data is loaded; and before the folder lock, which would create it.
  if (!f.control.resume_dir.empty() && !std::filesystem::exists(scheduler::CheckpointPath(f.control.resume_dir)))
    throw std::invalid_argument("--resume " + f.control.resume_dir +
                                ": no checkpoint here (resume from the folder the run wrote its checkpoints to)");
  // A resumed run keeps checkpointing where it resumed from unless told otherwise.
  if (!f.control.resume_dir.empty() && f.control.checkpoint_dir.empty()) f.control.checkpoint_dir = f.control.resume_dir;
  if (f.control.checkpoint_every > 0 && f.control.checkpoint_dir.empty())
    throw std::invalid_argument("--checkpoint-every needs --checkpoint-dir (or --resume, which checkpoints there)");
  f.options.hidden = ParseHidden(f.hidden);
  f.options.eval = ParseEvalEvery(f.eval_every);
  if (f.final_eval != "full" && f.final_eval != "sample")
    throw std::invalid_argument("--final-eval must be 'full' or 'sample', not '" + f.final_eval + "'");
  f.options.final_eval_full = f.final_eval == "full";
  f.options.math = ParseOutputMath(f.math, f.engine.devices);
  const kernels::PropensityModel propensity = ParsePropensity(f.propensity);
  const bool lr_auto = f.lr == "auto";
  if (!lr_auto) f.options.lr = ParsePositive("--lr", f.lr);
  // The checkpoint a run resumes from and the one it writes are no other output's to replace.
  RefuseOutputsInCheckpointFolder("--resume", f.control.resume_dir, {{"--model", f.model_out}, {"--metrics", f.metrics}});
  RefuseOutputsInCheckpointFolder("--checkpoint-dir", f.control.checkpoint_dir,
                                  {{"--model", f.model_out}, {"--metrics", f.metrics}});
  // Output files are opened before the long work, so that a bad path fails now, not at the end.
  ProbeOutputFile("--model", f.model_out);
  ProbeOutputFile("--metrics", f.metrics);
  if (writer) ProbeOutputDir("--checkpoint-dir", f.control.checkpoint_dir);
  RefuseOutputsOverInputs({{"--train", f.train}, {"--train-labels", f.train_labels}, {"--test", f.test},
                           {"--test-labels", f.test_labels}},
                          {{"--model", f.model_out}, {"--metrics", f.metrics}});
  // Held until the run ends: one run at a time writes a checkpoint folder (across ranks, rank 0).
  std::unique_ptr<data::FolderLock> checkpoint_lock;
  if (writer && !f.control.checkpoint_dir.empty()) {
    try {
      checkpoint_lock = std::make_unique<data::FolderLock>(f.control.checkpoint_dir);
    } catch (const std::runtime_error& e) {
      throw std::invalid_argument(std::string("--checkpoint-dir ") + e.what());
    }
    RefuseReplacingAnotherRunsCheckpoint(f.control.checkpoint_dir, f.control.resume_dir);
  }
  // A metrics file another run is writing is a usage error, as a checkpoint folder in use is.
  std::unique_ptr<scheduler::MetricsLog> metrics_log;
  try {
    metrics_log = std::make_unique<scheduler::MetricsLog>(f.metrics);
  } catch (const std::runtime_error& e) {
    throw std::invalid_argument(std::string("--metrics ") + e.what());
  }
  scheduler::MetricsLog& metrics = *metrics_log;

  const Clock::time_point load_start = Clock::now();
  data::Dataset train = LoadWithWarnings(f.train, f.train_labels, f.data, writer);
  std::unique_ptr<data::Dataset> test;
  if (!f.test.empty()) {
    test = std::make_unique<data::Dataset>(LoadWithWarnings(f.test, f.test_labels, f.data, writer));
    WarnUnlabelledEvaluationRows(*test, f.test, writer);
  }
  if (f.normalize == "l2") {
    train = data::NormalizeRowsL2(train);
    if (test) *test = data::NormalizeRowsL2(*test);
  } else if (f.normalize != "none") {
    throw std::invalid_argument("--normalize must be l2 or none");
  }
  const double load_seconds = std::chrono::duration<double>(Clock::now() - load_start).count();
  const float largest_raw_value = f.normalize == "none" ? LargestMagnitude(train.features) : 0.0f;

  const LrScaling lr_scaling = ApplyPreset(f, train.num_rows());
  kernels::ModelShape shape;
  shape.num_features = std::max(train.num_features(), test ? test->num_features() : 0);
  shape.num_labels = std::max(train.num_labels(), test ? test->num_labels() : 0);
  shape.hidden = f.options.hidden;
  shape.normalize_rows = f.normalize == "l2";
  kernels::ValidateShape(shape);
  // The test rows are also scored with the propensity-scored metrics, the propensities from the
  // training labels.
  if (test && train.num_rows() >= 2)
    test->inverse_propensity = data::SharedArray<float>(
        kernels::InversePropensities(train.labels, shape.num_labels, propensity));
  if (ranks->size() > 1) {
    // Before anything is trained, the ranks compare what each is about to train.
    nlohmann::json settings = scheduler::RunFingerprint(f.options, f.engine, shape, train, test.get());
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
  uint64_t planned_host_bytes = 0;
  {
    // Before the model and the replicas are allocated: fail now, with the numbers.
    const scheduler::MemoryPlan plan =
        scheduler::PlanMemory(shape, f.options, f.engine,
                              engine::LimitsFor(train, f.options.batch), train.num_rows(),
                              !f.control.checkpoint_dir.empty() || !f.control.resume_dir.empty());
    // Only the GPUs the run uses: asking a GPU opens a context on it, which holds its memory.
    std::vector<uint64_t> gpu_free;
    for (size_t i = 0; i < f.engine.devices.size(); ++i) {
      const engine::DeviceSpec& spec = f.engine.devices[i];
      const bool here = f.engine.ranks == nullptr || f.engine.device_rank.at(i) == f.engine.ranks->rank();
      if (spec.kind != engine::DeviceKind::kCuda || !here) continue;
      if (gpu_free.size() <= size_t(spec.ordinal)) gpu_free.resize(size_t(spec.ordinal) + 1, 0);
      if (gpu_free[size_t(spec.ordinal)] == 0) gpu_free[size_t(spec.ordinal)] = engine::CudaFreeMemory(spec.ordinal);
    }
    // Too big for this machine is a usage error (exit 2): a smaller --batch, fewer devices, or the
    // data's declared sizes (a header's D and L size the model) are the fix.
    // The machine's available memory, or less inside a memory-limited cgroup (a container).
    const uint64_t available = scheduler::AvailableMemory();
    try {
      scheduler::CheckMemoryFits(plan, available, gpu_free);
    } catch (const std::runtime_error& e) {
      const bool cgroup = available > 0 && available == scheduler::CgroupMemoryHeadroom();
      throw std::invalid_argument(std::string(e.what()) +
                                  (cgroup ? "\n(available: what this process's memory cgroup allows beyond its "
                                            "current use, less than the machine has free)"
                                          : ""));
    }
    planned_host_bytes = plan.host_total();
  }
  nlohmann::json lr_search_json;
  if (lr_auto) {
    const engine::DeviceSpec search_device = scheduler::LrSearchDevice(f.engine.devices, ranks->size());
    const scheduler::LrSearchResult search = scheduler::SearchLearningRate(train, shape, f.options, search_device);
    std::ostringstream grid;
    nlohmann::json candidates = nlohmann::json::array();
    for (const scheduler::LrCandidate& c : search.candidates) {
      grid << " " << c.lr << ":" << (c.diverged ? std::string("diverged") : std::to_string(c.heldout_p1).substr(0, 5));
      candidates.push_back({{"lr", c.lr}, {"heldout_p1", c.heldout_p1},
                            {"heldout_loss", c.diverged ? nlohmann::json(nullptr) : nlohmann::json(c.heldout_loss)},
                            {"diverged", c.diverged}});
    }
    // One step below the short runs' best, unless the best is the smallest candidate.
    std::ostringstream why;
    if (search.picked == search.winner) {
      why << "the short runs' best and the smallest candidate";
    } else {
      why << "one step below the short runs' best " << search.winner;
    }
    if (writer) std::cerr << "--lr auto: picked " << search.picked << ", " << why.str()
              << " (held-out P@1 per candidate:" << grid.str() << "; "
              << search.batches_per_candidate << " batches each on " << search.search_rows << " rows, "
              << search.heldout_rows << " held out, on " << search_device.id << ", " << search.seconds << " s)\n";
    lr_search_json = {{"picked", search.picked}, {"winner", search.winner}, {"candidates", candidates},
                      {"batches_per_candidate", search.batches_per_candidate},
                      {"search_rows", search.search_rows}, {"heldout_rows", search.heldout_rows},
                      {"device", search_device.id},
                      {"seconds", search.seconds}};
    f.options.lr = float(search.picked);
  }
  ScaleLearningRate(f, lr_scaling);
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

  const bool show_progress = writer && ::isatty(::fileno(stderr)) != 0;
  scheduler::TrainCallbacks callbacks;
  callbacks.on_resume = [&](const std::vector<scheduler::EvalRecord>& earlier) { metrics.Restart(earlier); };
  callbacks.on_event = [&](const std::string& text) {
    if (!writer) return;
    if (show_progress) std::cerr << "\r\033[K";
    std::cerr << text << "\n";
  };
  std::string stdout_error;  // why stdout could not be written, once it could not
  callbacks.on_eval = [&](const scheduler::EvalRecord& record) {
    if (!writer) return;
    if (show_progress) std::cerr << "\r\033[K";
    PrintEval(record);
    metrics.Append(record);
    if (!stdout_error.empty()) return;
    stdout_error = StdoutError();
    // A run that can no longer report stops at its next safe point when a checkpoint keeps its
    // progress. Without one, stopping would lose the whole run: it trains on to write its model
    // and metrics files, and fails at the end.
    if (!stdout_error.empty() && !f.control.checkpoint_dir.empty()) StopSignals::Request(SIGPIPE);
  };
  if (show_progress) {
    callbacks.on_progress = [last = Clock::now()](uint64_t done, uint64_t total, double loss) mutable {
      if (Clock::now() - last < std::chrono::milliseconds(200) && done < total) return;
      last = Clock::now();
      std::fprintf(stderr, "\r\033[K%5.1f%%  batch loss %.4f", 100.0 * double(done) / double(total), loss);
    };
  }
  StopSignals signals;
  f.control.stop_signal = &signals.requested();
  // A resumed run's log restarts from the checkpoint's records once the checkpoint is accepted.
  if (f.control.resume_dir.empty()) metrics.Begin();
  const scheduler::TrainResult result = [&] {
    try {
      return scheduler::RunMultiDevice(train, test.get(), f.options, f.engine, &model, callbacks, f.control);
    } catch (const scheduler::RunStopped& e) {
      // "A lower --lr" is the advice for a rate too high; for raw values this large the data is the
      // cause, and --normalize, which a resume cannot change, the fix.
      if (e.why() == scheduler::RunStopped::Why::kDiverged && largest_raw_value > kLargeRawValue) {
        std::ostringstream text;
        text << e.what() << ": the training rows hold feature values up to " << largest_raw_value
             << " and --normalize none passes them on as they are; a new run with --normalize l2 (the default) "
                "trains on rows of unit length";
        throw std::runtime_error(text.str());
      }
      throw;
    }
  }();
  if (result.stopped_by_signal != 0) {
    // An unfinished run: no model file, the metrics stay FILE.partial.
    const std::string go_on = result.checkpoint.empty() ? std::string("no --checkpoint-dir, so the progress is lost")
                                                        : "resume with --resume " + f.control.checkpoint_dir;
    // The stop this run asked for itself (a real SIGPIPE is ignored while training).
    if (!stdout_error.empty() && result.stopped_by_signal == SIGPIPE) {
      std::cerr << "error: " << stdout_error << "; the run stopped at a safe point; " << go_on << "\n";
      return kExitFailure;
    }
    if (writer) std::cerr << "stopped by signal " << result.stopped_by_signal << "; " << go_on << "\n";
    return 128 + result.stopped_by_signal;
  }
  if (!f.model_out.empty()) engine::SaveModel(model, f.model_out);
  metrics.Finish();
  if (!writer) return kExitOk;

  const scheduler::EvalRecord& last = result.last;
  nlohmann::json summary = {
      {"summary", true},
      {"model_shape", shape.ToString()},
      {"epochs", last.epoch},
      {"batches", result.batches},
      {"train_samples", last.train_samples},
      {"train_time_s", last.train_time_s},
      {"samples_per_s", last.train_time_s > 0 ? double(last.train_samples) / last.train_time_s : 0.0},
      {"wall_time_s", last.wall_time_s},
      {"load_time_s", load_seconds},
      {"train_loss", last.train_loss},
      {"rollbacks", result.rollbacks}};
  if (test) {
    summary.update(RankingJson(last.test.metrics));
    summary.update({{"loss", last.test.loss},
                    {"best_p1", result.best.test.metrics.p1},
                    {"best_epoch", result.best.epoch}});
  }
  if (!f.model_out.empty()) summary["model"] = f.model_out;
  if (!result.checkpoint.empty()) summary["checkpoint"] = result.checkpoint;
  if (!result.end_checkpoint_error.empty()) summary["checkpoint_error"] = result.end_checkpoint_error;
  if (!lr_search_json.is_null()) summary["lr_search"] = lr_search_json;
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

Command AddTrainCommand(CLI::App* app) {
  auto flags = std::make_shared<TrainFlags>();
  TrainFlags& f = *flags;
  CLI::App* cmd = app->add_subcommand("train", "Train a model on a training file, evaluating on a test file");
  cmd->add_option("--train", f.train, "Training data (XML-repository/libSVM text, or .xmlb)")->required();
  cmd->add_option("--train-labels", f.train_labels, "Labels file when --train is the X file of a split pair");
  cmd->add_option("--test", f.test, "Test data, evaluated on the --eval-every schedule");
  cmd->add_option("--test-labels", f.test_labels, "Labels file when --test is the X file of a split pair");
  cmd->add_option("--epochs", f.options.epochs, "Passes over the training rows (fractions allowed)")
      ->capture_default_str();
  cmd->add_option("--batch", f.options.batch, "Rows per batch")->capture_default_str()->check(kNotNegative);
  cmd->add_option("--lr", f.lr,
                  "Learning rate (SGD on the batch-mean loss) for a batch of --batch rows, or 'auto': "
                  "searched on a held-out slice of the training rows before training")
      ->capture_default_str();
  cmd->add_option("--local-momentum", f.options.local_momentum,
                  "Heavy-ball momentum of each device's SGD, in [0, 1) (single: 0.9; several devices: preset)");
  cmd->add_option("--normalize", f.normalize, "Input rows: l2 (scaled to unit norm) or none")->capture_default_str();
  cmd->add_option("--hidden", f.hidden, "Hidden layer sizes, comma separated (e.g. 256,128)")->capture_default_str();
  cmd->add_option("--mega-batch", f.options.mega_batch,
                  "Batches per mega-batch (single: 100; several devices: preset)")->check(kNotNegative);
  cmd->add_option("--eval-every", f.eval_every, "Evaluate: 'epoch', 'end' (or 0), or every N mega-batches")
      ->capture_default_str();
  cmd->add_option("--eval-rows", f.options.eval_rows,
                  "Evaluate on a fixed sample of this many test rows, drawn from --seed (0 = all rows)")
      ->capture_default_str()->check(kNotNegative);
  cmd->add_option("--final-eval", f.final_eval,
                  "The run's last evaluation: 'full' (the whole test set) or 'sample' (the --eval-rows sample)")
      ->capture_default_str();
  cmd->add_option("--math", f.math,
                  "The output layer's products in training: fp32; bf16 (bfloat16 inputs, fp32 sums; GPUs, and "
                  "CPUs with AMX or AVX-512 BF16, several times faster with AMX); or tf32 (GPUs only). On a GPU "
                  "it is every dense product's cuBLAS compute type")
      ->capture_default_str();
  AddPropensityFlag(cmd, &f.propensity);
  cmd->add_option("--seed", f.options.seed, "Seed for initialization and shuffling")->capture_default_str()->check(kNotNegative);
  cmd->add_option("--metrics", f.metrics, "Write one JSON line per evaluation to this file");
  cmd->add_option("--model", f.model_out, "Save the trained model to this file");
  AddDataFlags(cmd, &f.data);

  const char* kReliability = "Checkpoints and faults";
  cmd->add_option("--checkpoint-dir", f.control.checkpoint_dir,
                  "Write checkpoints here (at the end, on SIGINT/SIGTERM, and every --checkpoint-every mega-batches)")
      ->group(kReliability);
  cmd->add_option("--checkpoint-every", f.control.checkpoint_every,
                  "Mega-batches between checkpoints (0 = only at the end and on a stop)")
      ->capture_default_str()->group(kReliability)->check(kNotNegative);
  cmd->add_option("--resume", f.control.resume_dir,
                  "Continue the run checkpointed in this directory (same flags; --epochs is the total)")
      ->group(kReliability);
  cmd->add_option("--max-rollbacks", f.control.max_rollbacks,
                  "Divergences (NaN/Inf loss or model) rolled back with halved learning rates before the run stops")
      ->capture_default_str()->group(kReliability)->check(kNotNegative);
  cmd->add_option("--divergence-factor", f.options.divergence_factor,
                  "A batch loss above this many times the first batch's is a divergence, rolled back like a "
                  "non-finite one (0 = only non-finite values)")
      ->capture_default_str()->group(kReliability);
  cmd->add_option("--inject-fault", f.faults,
                  "Make a device fail, for tests and drills: device=I,megabatch=K[,kind=fail|nan|exit|lost] (repeatable; "
                  "kind=nan reports a NaN loss, a divergence; kind=exit ends the device's process, a dying rank; "
                  "kind=lost fails as a GPU whose context is lost, taking every logical device of that GPU with it)")
      ->group(kReliability);

  const char* kEngine = "Several devices";
  cmd->add_option("--algo", f.algo,
                  "single (one device); adaptive (dynamic dispatch, Algorithm 1, normalized merge); elastic "
                  "(static, average); adasum (static, Adasum); sync (gradient aggregation every step); "
                  "crossbow (synchronous model averaging every step)")
      ->capture_default_str()->group(kEngine);
  cmd->add_option("--devices", f.devices,
                  "Devices: cpu:N, cuda:0,cuda:1, cuda:0xN, or mixes (--algo single: one device, cpu unless given)")
      ->capture_default_str()->group(kEngine);
  cmd->add_option("--speed", f.speed, "Relative slowness per device, e.g. 1,1.1,1.2,1.32")->group(kEngine);
  cmd->add_option("--hetero", f.hetero, "Gamma-model heterogeneity: cvb:vmach=0.6,vtask=0.1, or none")
      ->capture_default_str()->group(kEngine);
  cmd->add_option("--rank-timeout", f.rank_timeout_s,
                  "Under mpirun: seconds a rank waits for the others at a merge or exchange before it stops "
                  "the run naming itself (a dead or hung rank)")
      ->capture_default_str()->group(kEngine);
  cmd->add_option("--clock", f.clock,
                  "virtual (simulated time from a calibrated per-row cost: deterministic) or wall (real time; "
                  "emulated slowness becomes waiting)")
      ->capture_default_str()->group(kEngine);
  cmd->add_option("--row-cost", f.engine.row_cost_s,
                  "Virtual clock: seconds per row (0 = measured on the first mega-batch)")
      ->capture_default_str()->group(kEngine);
  cmd->add_option("--merge-cost", f.engine.merge_cost_s,
                  "Virtual clock: seconds per parameter and replica of one merge (0 = measured on the first)")
      ->capture_default_str()->group(kEngine);
  cmd->add_option("--batch-min", f.engine.batch_min, "Smallest batch of Algorithm 1 (0 = --batch / 8)")
      ->capture_default_str()->group(kEngine);
  cmd->add_option("--beta", f.engine.beta, "Algorithm 1's rows per update of deviation (0 = batch-min / 2)")
      ->capture_default_str()->group(kEngine);
  cmd->add_option("--preset", f.preset,
                  "Values of the knobs below that are not given: default (measured to match one device's "
                  "accuracy) or paper (the Adaptive SGD paper's section 5.1); table below")
      ->capture_default_str()->group(kEngine);
  cmd->add_option("--momentum", f.engine.momentum, "Global momentum gamma of the merged model (default: preset)")
      ->group(kEngine);
  cmd->add_option("--lr-scaling", f.lr_scaling,
                  "How --lr grows with the device count n: linear (x n), sqrt or none (default: preset)")
      ->group(kEngine);
  cmd->add_option("--pert-weights", f.pert_weights,
                  "Perturbed merge weights: normalized (scaled back to sum 1) or raw (the paper's; default: preset)")
      ->group(kEngine);
  cmd->add_option("--pert-thr", f.engine.pert_threshold,
                  "Perturb merge weights when every replica's L2 norm / #params is below this")
      ->capture_default_str()->group(kEngine);
  cmd->add_option("--pert-delta", f.engine.pert_delta, "Perturbation factor of the merge weights")
      ->capture_default_str()->group(kEngine);
  cmd->add_option("--schedule", f.schedule,
                  "Overrides the preset: dynamic (next batch to the free device), static (equal shares), "
                  "sync (each round every device takes --batch / n rows; merged every round)")
      ->capture_default_str()->group(kEngine);
  cmd->add_option("--merge", f.merge,
                  "Overrides the preset: normalized (Algorithm 2), average (elastic; EASGD with "
                  "--elastic-alpha), adasum, crossbow or gradient (the last two need --schedule sync)")
      ->capture_default_str()->group(kEngine);
  cmd->add_option("--collective", f.collective, "Weighted sums over the replicas: ring, tree or naive")
      ->capture_default_str()->group(kEngine);
  cmd->add_option("--momentum-mode", f.momentum_mode,
                  "heavy (w' = merge + gamma (w - w_prev)) or nesterov (replicas start from w + gamma "
                  "(w - w_prev))")
      ->capture_default_str()->group(kEngine);
  cmd->add_option("--elastic-alpha", f.engine.elastic_alpha,
                  "Elastic force: with --merge average, EASGD's pull toward the center (0 = plain "
                  "averaging); with crossbow, its a (0 = 1 / devices)")
      ->capture_default_str()->group(kEngine);
  cmd->footer(PresetTable());
  f.command = cmd;
  return {cmd, [flags] { return RunTrain(*flags); }};
}

}  // namespace xmlt::apps
