// From the flags of `xmltrain train` to checked, typed options; see train_settings.h.
#include "apps/train_settings.h"

#include <algorithm>
#include <cmath>
#include <iostream>
#include <sstream>
#include <stdexcept>

#include "engine/device_query.h"
#include "engine/device_spec.h"
#include "engine/heterogeneity.h"
#include "kernels/cpu/bf16_gemm.h"
#include "run/trainer.h"
#include "scheduler/memory_limit.h"
#include "scheduler/memory_plan.h"

namespace xmlt::apps {

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

// --math: refused here, before the data is loaded, where this build, CPU or device list cannot do
// it. GPUs take fp32, tf32 and bf16 (cuBLAS's compute types); CPUs fp32, and bf16 where they have
// native bf16. auto is bf16 on CPU-only runs of the dense step whose CPU has it (the step takes
// 0.71 to 0.79x fp32's time with AVX-512 BF16, about half with AMX; docs/training.md), and fp32
// elsewhere: on GPUs, and for the sampled step, which computes in fp32.
kernels::OutputMath ParseOutputMath(const std::string& text, const std::vector<engine::DeviceSpec>& devices,
                                    bool sampled_output) {
  const auto is_cpu = [](const engine::DeviceSpec& spec) { return spec.kind == engine::DeviceKind::kCpu; };
  const auto cpu = std::find_if(devices.begin(), devices.end(), is_cpu);
  if (text == "auto") {
    const bool cpus_only = std::all_of(devices.begin(), devices.end(), is_cpu);
    const bool bf16 = cpus_only && !sampled_output && kernels::cpu::Bf16Available(nullptr);
    return bf16 ? kernels::OutputMath::kBf16 : kernels::OutputMath::kFp32;
  }
  if (text == "fp32") return kernels::OutputMath::kFp32;
  if (text != "bf16" && text != "tf32")
    throw std::invalid_argument("--math must be auto, fp32, bf16 or tf32, not '" + text + "'");
  if (text == "tf32") {
    if (cpu != devices.end())
      throw std::invalid_argument("--math tf32 is for CUDA devices; " + cpu->id + " computes in fp32 or bf16");
    return kernels::OutputMath::kTf32;
  }
  if (cpu != devices.end()) {
    std::string why;
    if (!kernels::cpu::Bf16Available(&why)) throw std::invalid_argument("--math bf16 on " + cpu->id + ": " + why);
  }
  return kernels::OutputMath::kBf16;
}

bool OneDevice(const TrainFlags& f) { return f.algo == "single" || f.algo == "slide"; }

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
  if (f.clock_costs != "model" && f.clock_costs != "measured")
    throw std::invalid_argument("--clock-costs must be model or measured, not '" + f.clock_costs + "'");
  if (f.given("--clock-costs") && f.clock == "wall")
    throw std::invalid_argument("--clock-costs is for the virtual clock; --clock wall measures real time");
  f.engine.measure_clock_costs = f.clock_costs == "measured";
  if (f.momentum_mode == "heavy" || f.momentum_mode == "nesterov") {
    f.engine.nesterov = f.momentum_mode == "nesterov";
  } else {
    throw std::invalid_argument("--momentum-mode must be heavy or nesterov");
  }
  if (f.merge_on == "auto") {
    f.engine.merge_on = Engine::MergeOn::kAuto;
  } else if (f.merge_on == "host") {
    f.engine.merge_on = Engine::MergeOn::kHost;
  } else if (f.merge_on == "gpus") {
    f.engine.merge_on = Engine::MergeOn::kGpus;
  } else {
    throw std::invalid_argument("--merge-on must be auto, host or gpus");
  }
  std::string schedule, merge;
  bool plain_local_sgd = false;  // the synchronous algorithms step each replica with plain SGD
  if (f.algo == "slide") {
    // SLIDE: one CPU device whose threads share its model, with the sampled output layer; plain
    // SGD (its step has no momentum buffer to update sparsely).
    if (f.given("--devices") && (f.engine.devices.size() != 1 || f.engine.devices[0].kind != engine::DeviceKind::kCpu))
      throw std::invalid_argument("--algo slide trains on one CPU device, whose threads share the model (--threads); "
                                  "not on " + f.devices);
    if (f.given("--merge-on"))
      throw std::invalid_argument("--merge-on: --algo slide trains one CPU device and has no merge; drop it");
    f.engine = run::SingleDeviceEngine(engine::DeviceSpec{});
    f.engine.sampled_output = f.sampled_output;
    f.engine.sampled_output.enabled = true;
    if (!f.given("--local-momentum")) f.options.local_momentum = 0;
    return;  // its --lr default, 1, is GivenLearningRate's
  }
  if (f.algo == "single") {
    // The engine with one device, of any kind: the CPU unless --devices names another.
    if (f.given("--devices") && f.engine.devices.size() != 1)
      throw std::invalid_argument("--algo single trains on one device; use --algo adaptive, elastic, adasum, "
                                  "sync or crossbow for " + f.devices);
    const Engine::MergeOn merge_on = f.engine.merge_on;
    f.engine = run::SingleDeviceEngine(f.given("--devices") ? f.engine.devices[0] : engine::DeviceSpec{});
    // Its one replica becomes the global model after every mega-batch, on the GPU or on the host.
    f.engine.merge_on = merge_on;
    if (merge_on == Engine::MergeOn::kGpus && f.engine.devices[0].kind != engine::DeviceKind::kCuda)
      throw std::invalid_argument("--merge-on gpus needs a GPU; --algo single trains on " + f.engine.devices[0].id);
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
    throw std::invalid_argument("--algo must be single, slide, adaptive, elastic, adasum, sync or crossbow");
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
  // The CPU devices of the list train with SLIDE's output layer (the device pool makes them); the
  // merges see the same parameters either way.
  if (f.cpu_output == "sampled") {
    f.engine.sampled_output = f.sampled_output;
    f.engine.sampled_output.enabled = true;
  }
}

uint32_t DefaultHidden(uint64_t features, uint64_t labels) {
  // Wider hidden layers fitted every real set better up to 1024 (docs/experiments/peers.md), and a
  // layer wider than the input adds nothing the input can fill (Delicious' 500 features: 512
  // beat 1024). The parameter bound keeps the full Table 1 shapes at 128, as before.
  constexpr uint64_t kParameterBound = uint64_t{1} << 27;
  uint32_t hidden = 1024;
  while (hidden > 128 && (features + labels) * hidden > kParameterBound) hidden /= 2;
  while (hidden > 128 && hidden / 2 >= features) hidden /= 2;
  return hidden;
}

// Dropout 0.5 and the first layer's Adagrad by default: every device's step implements both (the
// CPU's dense and sampled steps and the CUDA replica; engine/step_regularization.h).
void SettleStepDefaults(TrainFlags& f) {
  // Dropout 0.5 on the hidden layer: the wide default layer overfits without it (peers.md).
  if (!f.given("--dropout")) f.options.dropout = 0.5f;
  bool adagrad = false;
  if (f.input_optimizer == "auto" || f.input_optimizer == "adagrad") {
    adagrad = true;
  } else if (f.input_optimizer != "sgd") {
    throw std::invalid_argument("--input-optimizer must be auto, adagrad or sgd, not '" + f.input_optimizer + "'");
  }
  if (f.given("--input-lr") && !adagrad)
    throw std::invalid_argument("--input-lr is the first layer's Adagrad rate: it needs --input-optimizer adagrad");
  if (adagrad && !(f.input_lr > 0 && std::isfinite(f.input_lr)))
    throw std::invalid_argument("--input-lr must be a positive number");
  f.options.input_lr = adagrad ? f.input_lr : 0.0f;
}

void CheckGpusExist(const TrainFlags& f) {
  for (size_t i = 0; i < f.engine.devices.size(); ++i) {
    const engine::DeviceSpec& d = f.engine.devices[i];
    const bool local = f.engine.ranks == nullptr || i >= f.engine.device_rank.size() ||
                       f.engine.device_rank[i] == f.engine.ranks->rank();
    if (local && d.kind == engine::DeviceKind::kCuda && d.ordinal >= engine::CudaDeviceCount())
      throw std::invalid_argument("device " + d.id + " does not exist (" + engine::CudaDeviceSummary() +
                                  "); use --devices cpu:N");
  }
}

// Flags that need no data are checked before the data is loaded (minutes at full size): the
// training options as given, the multi-device ones, and flags that --algo single would ignore.
void CheckFlagsBeforeLoading(TrainFlags& f) {
  SettleStepDefaults(f);
  scheduler::ValidateTrainOptions(f.options);
  if (f.cpu_output != "dense" && f.cpu_output != "sampled")
    throw std::invalid_argument("--cpu-output must be dense or sampled, not '" + f.cpu_output + "'");
  if (f.given("--cpu-output") && OneDevice(f))
    throw std::invalid_argument("--cpu-output applies to the CPU devices of a multi-device run (--algo adaptive, "
                                "elastic, adasum, sync or crossbow); --algo " + f.algo +
                                (f.algo == "slide" ? " is the sampled output layer on one CPU device already"
                                                   : " trains one dense device: use --algo slide for SLIDE's"));
  const bool cpu_sampled = f.cpu_output == "sampled" && !OneDevice(f);
  if (cpu_sampled && std::none_of(f.engine.devices.begin(), f.engine.devices.end(), [](const engine::DeviceSpec& d) {
        return d.kind == engine::DeviceKind::kCpu;
      }))
    throw std::invalid_argument("--cpu-output sampled: --devices " + f.devices + " has no CPU device to sample on");
  if (f.algo != "slide" && !cpu_sampled)
    for (const char* flag : {"--slide-hash", "--slide-k", "--slide-l", "--slide-bucket", "--slide-min-active",
                             "--slide-weight-padding", "--slide-rehash-first", "--slide-rehash-growth"})
      if (f.given(flag))
        throw std::invalid_argument(std::string(flag) + " applies to --algo slide or --cpu-output sampled");
  if (f.algo == "slide" || cpu_sampled) {
    const engine::SampledOutputOptions& s = f.sampled_output;
    if (f.given("--slide-hash") && s.hash != "dwta" && s.hash != "simhash")
      throw std::invalid_argument("--slide-hash must be dwta or simhash, not '" + s.hash + "'");
    if (s.k == 0 || s.l == 0 || s.bucket_cap == 0 || s.first_rebuild == 0)
      throw std::invalid_argument("--slide-k, --slide-l, --slide-bucket and --slide-rehash-first must be at least 1");
    if (s.k > 32) throw std::invalid_argument("--slide-k must be at most 32");
    if (!(s.rebuild_growth >= 1.0) || !std::isfinite(s.rebuild_growth))
      throw std::invalid_argument("--slide-rehash-growth must be a finite number of at least 1");
    if (f.algo == "slide" && f.options.local_momentum != 0)
      throw std::invalid_argument("--algo slide steps with plain SGD; --local-momentum must be 0");
    if (f.math != "fp32" && f.math != "auto")
      throw std::invalid_argument(std::string(f.algo == "slide" ? "--algo slide" : "--cpu-output sampled") +
                                  " computes its output layer in fp32; drop --math");
  }
  // Weight decay is the CPU dense step's alone (engine/step_regularization.h).
  if (f.options.weight_decay != 0 && (f.algo == "slide" || cpu_sampled))
    throw std::invalid_argument("--weight-decay is implemented by the dense step of CPU devices only, not by " +
                                std::string(f.algo == "slide" ? "--algo slide" : "--cpu-output sampled") +
                                "'s sampled output layer");
  if (f.options.weight_decay != 0)
    for (const engine::DeviceSpec& d : f.engine.devices)
      if (d.kind != engine::DeviceKind::kCpu)
        throw std::invalid_argument("--weight-decay is implemented by the dense step of CPU devices only, not by the "
                                    "CUDA backend (device " + d.id + "): use --devices cpu:N");
  if (OneDevice(f)) {
    for (const char* flag : {"--speed", "--hetero", "--clock", "--clock-costs", "--row-cost", "--merge-cost",
                             "--batch-min", "--beta", "--momentum", "--pert-thr", "--pert-delta", "--pert-weights",
                             "--schedule", "--merge", "--collective", "--momentum-mode", "--elastic-alpha",
                             "--lr-scaling", "--preset"})
      if (f.given(flag))
        throw std::invalid_argument(std::string(flag) + " applies to several devices and --algo " + f.algo +
                                    " would ignore it: drop it, or choose --algo adaptive, elastic, adasum, sync or "
                                    "crossbow");
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

// The multi-device knobs the user left unset, from --preset; returns how the learning rate scales
// with the device count (ScaleLearningRate applies it once the base rate is known).
LrScaling ApplyPreset(TrainFlags& f, uint64_t training_rows) {
  if (OneDevice(f)) return LrScaling::kNone;
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

// Under an MPI launcher one run spans every rank: --devices names each rank's own devices, the run
// has all of them, rank after rank (--speed and --hetero cover them all, in that order), and rank
// 0 alone writes the metrics, the model, the checkpoints and the summary.
void SpreadOverRanks(TrainFlags& f, ranks::RankGroup* ranks) {
  if (ranks->size() <= 1) return;
  // The default --algo is one device in one process; say so rather than count the ranks' devices.
  if (OneDevice(f))
    throw std::invalid_argument("--algo " + f.algo + " trains one device in one process; a run over " +
                                std::to_string(ranks->size()) +
                                " MPI ranks needs a multi-device --algo (adaptive, elastic, adasum, sync, crossbow)");
  f.engine.devices = engine::DevicesOfRanks(f.engine.devices, ranks->size(), &f.engine.device_rank);
  f.engine.ranks = ranks;
  if (ranks->rank() != 0) {
    f.model_out.clear();
    f.metrics.clear();
  }
}

// Before the model and the replicas are allocated: fails now, with the numbers, when the run does
// not fit this machine (a usage error: a smaller --batch, fewer devices, or the data's declared
// sizes, a header's D and L, are the fix). Returns the planned host memory.
uint64_t CheckMemoryPlan(const TrainFlags& f, const kernels::ModelShape& shape, const data::Dataset& train) {
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
  return plan.host_total();
}

void ApplySampledOutputPreset(TrainFlags& f, uint64_t labels) {
  if (!f.engine.sampled_output.enabled) return;
  const engine::SampledOutputOptions preset = engine::SampledOutputOptions::PresetFor(labels);
  engine::SampledOutputOptions& s = f.engine.sampled_output;
  if (!f.given("--slide-hash")) s.hash = preset.hash;
  if (!f.given("--slide-k")) s.k = preset.k;
  if (!f.given("--slide-l")) s.l = preset.l;
  if (!f.given("--slide-weight-padding"))
    s.weight_padding = engine::SampledOutputOptions::WeightPaddingFor(labels, s.min_active);
  s.seed = f.options.seed;
  s.report_active_sets = true;
  if (f.engine.ranks != nullptr && f.engine.ranks->rank() != 0) return;
  std::cerr << "slide: " << s.hash << " K=" << s.k << " L=" << s.l << ", buckets of up to " << s.bucket_cap
            << " labels, active sets padded to " << s.min_active
            << (s.weight_padding ? " (the padding weighted)" : " (the padding unweighted)") << ", tables rebuilt every merge and rehashed after "
            << s.first_rebuild << " updates, each gap x" << s.rebuild_growth << "\n";
}

}  // namespace xmlt::apps
