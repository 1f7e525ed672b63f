// The flags' parsers, and the settings the loaded data decides; see train_settings.h.
#include "apps/train_settings.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <optional>
#include <iostream>
#include <sstream>
#include <stdexcept>
#include <string>

#include "apps/checkpoint_folder.h"
#include "apps/train_algorithm.h"
#include "apps/train_learning_rate.h"
#include "apps/shortest_text.h"
#include "engine/device.h"
#include "engine/device_query.h"
#include "engine/device_spec.h"
#include "kernels/cpu/bf16_gemm.h"
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

void PlanShape(const TrainFlags& f, const data::Dataset& train, TrainPlan* plan) {
  kernels::ModelShape shape;
  shape.num_features = train.num_features();
  shape.num_labels = train.num_labels();
  if (f.hidden == "auto") {
    uint32_t width = DefaultHidden(shape.num_features, shape.num_labels);
    // The ranker as planned before loading (a ranker left out after this, for too few rows or
    // too little memory, keeps the narrower MLP).
    const uint64_t parameters = (shape.num_features + shape.num_labels) * uint64_t{width};
    if (plan->ranker.enabled && width > kShortlistMlpWidth && parameters > kShortlistMlpFromParameters) {
      width = kShortlistMlpWidth;
      if (!f.given("--epochs")) plan->options.epochs = kShortlistMlpEpochs;
    }
    shape.hidden = {width};
  } else {
    shape.hidden = ParseHidden(f.hidden);
  }
  shape.normalize_rows = f.normalize == "l2";
  kernels::ValidateShape(shape);
  plan->shape = shape;
  plan->options.hidden = shape.hidden;
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

kernels::OutputMath PlanOutputMath(const TrainFlags& f, const TrainPlan& plan, bool sampled_output) {
  if (plan.control.resume_dir.empty() || f.math != "auto")
    return ParseOutputMath(f.math, plan.scheduling.devices, sampled_output);
  const std::optional<std::string> saved = CheckpointedOutputMath(plan.control.resume_dir);
  if (!saved) return ParseOutputMath(f.math, plan.scheduling.devices, sampled_output);
  try {
    return ParseOutputMath(*saved, plan.scheduling.devices, sampled_output);
  } catch (const std::invalid_argument& e) {
    throw std::invalid_argument("--resume " + plan.control.resume_dir + ": the run trained with --math " + *saved +
                                ", which a resume with --math auto keeps, and " + e.what());
  }
}

bool PlanBf16OptimizerState(const TrainFlags& f, const TrainPlan& plan, bool sampled_output) {
  const std::string& text = f.optimizer_state;
  if (text != "auto" && text != "fp32" && text != "bf16")
    throw std::invalid_argument("--optimizer-state must be auto, fp32 or bf16, not '" + text + "'");
  const bool bf16_products = plan.options.math == kernels::OutputMath::kBf16;
  // The dense step, on a CPU or a GPU: with --cpu-output sampled its GPUs keep a dense step.
  const bool dense_step = std::any_of(plan.scheduling.devices.begin(), plan.scheduling.devices.end(),
                                      [&](const engine::DeviceSpec& spec) {
                                        return spec.kind == engine::DeviceKind::kCuda || !sampled_output;
                                      });
  if (text == "bf16") {
    if (!dense_step)
      throw std::invalid_argument("--optimizer-state bf16 is for the dense step, on CPUs or GPUs; this run has none "
                                  "(the sampled step keeps its state in fp32)");
    if (!bf16_products)
      throw std::invalid_argument("--optimizer-state bf16 needs the output layer's products in bf16 (--math bf16); "
                                  "this run computes them in " + std::string(kernels::OutputMathName(plan.options.math)));
    return true;
  }
  if (text == "fp32") return false;
  if (!plan.control.resume_dir.empty())
    if (const std::optional<std::string> saved = CheckpointedOptimizerState(plan.control.resume_dir))
      return *saved == "bf16" && dense_step && bf16_products;
  return dense_step && bf16_products;
}

bool PlanBf16Weights(const TrainFlags& f, TrainPlan* plan, bool sampled_output) {
  const std::string& text = f.weights;
  if (text != "auto" && text != "fp32" && text != "bf16")
    throw std::invalid_argument("--weights must be auto, fp32 or bf16, not '" + text + "'");
  if (text == "fp32") return false;
  using MergeOn = scheduler::SchedulerOptions::MergeOn;
  scheduler::SchedulerOptions& scheduling = plan->scheduling;
  const bool bf16_products = plan->options.math == kernels::OutputMath::kBf16;
  const bool told_gpu_merges =
      scheduling.merge_on == MergeOn::kGpus || scheduling.collective == merge::CollectiveKind::kNccl;
  if (text == "auto") {
    std::optional<std::string> saved;
    if (!plan->control.resume_dir.empty()) saved = CheckpointedWeights(plan->control.resume_dir);
    if (!saved) return !sampled_output && bf16_products && scheduler::MergesBf16Weights(scheduling);
    // A resume keeps the checkpoint's weights where it can, so that it stays exact: GPUs alone
    // merge on the host again, as the checkpointed run did, unless told to merge on the GPUs.
    if (*saved != "bf16" || sampled_output || !bf16_products) return false;
    if (scheduler::MergesOnGpus(scheduling) && told_gpu_merges) return false;
  } else {
    if (sampled_output)
      throw std::invalid_argument("--weights bf16 is for the dense step: the sampled step reads fp32 weights");
    if (!bf16_products)
      throw std::invalid_argument("--weights bf16 needs the output layer's products in bf16 (--math bf16); this run "
                                  "computes them in " + std::string(kernels::OutputMathName(plan->options.math)));
    if (scheduler::MergesOnGpus(scheduling) && told_gpu_merges)
      throw std::invalid_argument(std::string("--weights bf16 merges the replicas on the host, through bf16 mirrors: ") +
                                  (scheduling.merge_on == MergeOn::kGpus ? "not with --merge-on gpus"
                                                                         : "not with --collective nccl"));
  }
  if (scheduler::MergesOnGpus(scheduling)) scheduling.merge_on = MergeOn::kHost;  // GPU merges read fp32 in place
  return true;
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

// The multi-device knobs the user left unset, from --preset, and how the learning rate scales with
// the device count (ScaleLearningRate applies it once the base rate is known).
void ApplyPreset(const TrainFlags& f, uint64_t training_rows, TrainPlan* plan) {
  if (OneDevice(f)) return;  // its rate scales with nothing: LrScaling::kNone
  const size_t devices = plan->scheduling.devices.size();
  const uint64_t batches_per_epoch = (training_rows + plan->options.batch - 1) / plan->options.batch;
  const PresetValues values =
      f.preset == "paper" ? PaperPreset() : DefaultPreset(f.algo, devices, batches_per_epoch);
  if (!f.given("--momentum")) plan->scheduling.merge_rule.momentum = values.momentum;
  if (!f.given("--local-momentum")) plan->options.local_momentum = values.local_momentum;
  if (!f.given("--mega-batch")) plan->options.mega_batch = values.mega_batch;
  plan->options.mega_batch_warmup =
      f.given("--mega-batch-warmup") ? f.mega_batch_warmup == "on" : values.mega_batch_warmup;
  plan->lr_scaling = f.given("--lr-scaling") ? ParseLrScaling(f.lr_scaling) : values.lr_scaling;
  // Their spellings were checked before loading (CheckFlagsBeforeLoading).
  plan->scheduling.merge_rule.renormalize_perturbed =
      f.given("--pert-weights") ? f.pert_weights == "normalized" : values.pert_renormalize;
}

// Before the model and the replicas are allocated: fails now, with the numbers, when the run does
// not fit this machine (a usage error: a smaller --batch, fewer devices, or the data's declared
// sizes, a header's D and L, are the fix). Returns the planned host memory.
uint64_t CheckMemoryPlan(const TrainFlags& f, const TrainPlan& plan, const data::Dataset& train, int rank,
                         const scheduler::RankerMemory& ranker) {
  scheduler::MemoryPlan memory = scheduler::PlanMemory(
      plan.shape, OptionsWithGivenInputRate(f, plan), plan.scheduling, engine::LimitsFor(train, plan.options.batch),
      train.num_rows(), !plan.control.checkpoint_dir.empty() || !plan.control.resume_dir.empty(), rank);
  memory.ranker = ranker;
  // Only the GPUs the run uses: asking a GPU opens a context on it, which holds its memory.
  std::vector<uint64_t> gpu_free;
  for (size_t i = 0; i < plan.scheduling.devices.size(); ++i) {
    const engine::DeviceSpec& spec = plan.scheduling.devices[i];
    const bool here = plan.scheduling.device_rank.empty() || plan.scheduling.device_rank.at(i) == rank;
    if (spec.kind != engine::DeviceKind::kCuda || !here) continue;
    if (gpu_free.size() <= size_t(spec.ordinal)) gpu_free.resize(size_t(spec.ordinal) + 1, 0);
    if (gpu_free[size_t(spec.ordinal)] == 0) gpu_free[size_t(spec.ordinal)] = engine::CudaFreeMemory(spec.ordinal);
  }
  // The machine's available memory, or less inside a memory-limited cgroup (a container).
  const uint64_t available = scheduler::AvailableMemory();
  try {
    scheduler::CheckMemoryFits(memory, available, gpu_free);
  } catch (const std::runtime_error& e) {
    const bool cgroup = available > 0 && available == scheduler::CgroupMemoryHeadroom();
    const bool set = available > 0 && available == scheduler::MemoryLimitFromEnvironment();
    throw std::invalid_argument(std::string(e.what()) +
                                (set      ? "\n(available: XMLT_MEMORY_LIMIT)"
                                 : cgroup ? "\n(available: what this process's memory cgroup allows beyond its "
                                            "current use, less than the machine has free)"
                                          : ""));
  }
  return memory.host_total();
}

void ApplySampledOutputPreset(const TrainFlags& f, uint64_t labels, bool say, TrainPlan* plan) {
  if (!plan->scheduling.sampled_output.enabled) return;
  const engine::SampledOutputOptions preset = engine::SampledOutputOptions::PresetFor(labels);
  engine::SampledOutputOptions& s = plan->scheduling.sampled_output;
  if (!f.given("--slide-hash")) s.hash = preset.hash;
  if (!f.given("--slide-k")) s.k = preset.k;
  if (!f.given("--slide-l")) s.l = preset.l;
  if (!f.given("--slide-weight-padding"))
    s.weight_padding = engine::SampledOutputOptions::WeightPaddingFor(labels, s.min_active);
  s.seed = plan->options.seed;
  s.report_active_sets = true;
  if (!say) return;
  std::cerr << "slide: " << s.hash << " K=" << s.k << " L=" << s.l << ", buckets of up to " << s.bucket_cap
            << " labels, active sets padded to " << s.min_active
            << (s.weight_padding ? " (the padding weighted)" : " (the padding unweighted)") << ", tables rebuilt every merge and rehashed after "
            << s.first_rebuild << " updates, each gap x" << s.rebuild_growth << "\n";
}

}  // namespace xmlt::apps
