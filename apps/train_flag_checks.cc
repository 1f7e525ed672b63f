// The flags that need no data, checked before it is loaded; see train_flag_checks.h.
#include "apps/train_flag_checks.h"

#include <algorithm>
#include <cmath>
#include <sstream>
#include <stdexcept>
#include <string>

#include "apps/algorithm_flags.h"
#include "apps/train_algorithm.h"
#include "apps/train_learning_rate.h"
#include "apps/train_presets.h"
#include "engine/device_query.h"
#include "engine/device_spec.h"
#include "scheduler/train_options.h"

namespace xmlt::apps {

// Dropout 0.5 and the first layer's Adagrad by default: every device's step implements both (the
// CPU's dense and sampled steps and the CUDA replica; engine/step_settings.h).
void PlanStepDefaults(const TrainFlags& f, TrainPlan* plan) {
  // Dropout 0.5 on the hidden layer: the wide default layer overfits without it (peers.md).
  if (!f.given("--dropout")) plan->options.dropout = 0.5f;
  GivenInputLearningRate(f);  // refused now; written after loading (ScaleLearningRate)
}

void CheckGpusExist(const TrainPlan& plan, int rank) {
  for (size_t i = 0; i < plan.scheduling.devices.size(); ++i) {
    const engine::DeviceSpec& d = plan.scheduling.devices[i];
    const bool local = i >= plan.scheduling.device_rank.size() || plan.scheduling.device_rank[i] == rank;
    if (local && d.kind == engine::DeviceKind::kCuda && d.ordinal >= engine::CudaDeviceCount())
      throw std::invalid_argument("device " + d.id + " does not exist (" + engine::CudaDeviceSummary() +
                                  "); use --devices cpu:N");
  }
}

// Flags that need no data are checked before the data is loaded (minutes at full size): the
// training options as given, the multi-device ones, and flags that --algo single would ignore.
void CheckFlagsBeforeLoading(const TrainFlags& f, const TrainPlan& plan) {
  scheduler::ValidateTrainOptions(plan.options);
  if (f.cpu_output != "dense" && f.cpu_output != "sampled")
    throw std::invalid_argument("--cpu-output must be dense or sampled, not '" + f.cpu_output + "'");
  if (f.given("--cpu-output") && OneDevice(f))
    throw std::invalid_argument("--cpu-output applies to the CPU devices of a multi-device run (--algo adaptive, "
                                "elastic, adasum, sync or crossbow); --algo " + f.algo +
                                (f.algo == "slide" ? " is the sampled output layer on one CPU device already"
                                                   : " trains one dense device: use --algo slide for SLIDE's"));
  const bool cpu_sampled = f.cpu_output == "sampled" && !OneDevice(f);
  if (cpu_sampled && std::none_of(plan.scheduling.devices.begin(), plan.scheduling.devices.end(),
                                  [](const engine::DeviceSpec& d) { return d.kind == engine::DeviceKind::kCpu; }))
    throw std::invalid_argument("--cpu-output sampled: --devices " + f.devices + " has no CPU device to sample on");
  if (f.algo != "slide" && !cpu_sampled)
    for (const char* flag : {"--slide-hash", "--slide-k", "--slide-l", "--slide-bucket", "--slide-min-active",
                             "--slide-weight-padding", "--slide-rehash-first", "--slide-rehash-growth"})
      if (f.given(flag))
        throw std::invalid_argument(std::string(flag) + " applies to --algo slide or --cpu-output sampled");
  if (f.algo == "slide" || cpu_sampled) {
    const engine::SampledOutputOptions& s = GivenSampledOutput(f);
    if (f.given("--slide-hash") && s.hash != "dwta" && s.hash != "simhash")
      throw std::invalid_argument("--slide-hash must be dwta or simhash, not '" + s.hash + "'");
    if (s.k == 0 || s.l == 0 || s.bucket_cap == 0 || s.first_rebuild == 0)
      throw std::invalid_argument("--slide-k, --slide-l, --slide-bucket and --slide-rehash-first must be at least 1");
    if (s.k > 32) throw std::invalid_argument("--slide-k must be at most 32");
    if (!(s.rebuild_growth >= 1.0) || !std::isfinite(s.rebuild_growth))
      throw std::invalid_argument("--slide-rehash-growth must be a finite number of at least 1");
    if (f.algo == "slide" && plan.options.local_momentum != 0)
      throw std::invalid_argument("--algo slide steps with plain SGD; --local-momentum must be 0");
    if (f.math != "fp32" && f.math != "auto")
      throw std::invalid_argument(std::string(f.algo == "slide" ? "--algo slide" : "--cpu-output sampled") +
                                  " computes its output layer in fp32; drop --math");
  }
  // Weight decay is the CPU dense step's alone (engine/step_settings.h).
  if (plan.options.weight_decay != 0 && (f.algo == "slide" || cpu_sampled))
    throw std::invalid_argument("--weight-decay is implemented by the dense step of CPU devices only, not by " +
                                std::string(f.algo == "slide" ? "--algo slide" : "--cpu-output sampled") +
                                "'s sampled output layer");
  if (plan.options.weight_decay != 0)
    for (const engine::DeviceSpec& d : plan.scheduling.devices)
      if (d.kind != engine::DeviceKind::kCpu)
        throw std::invalid_argument("--weight-decay is implemented by the dense step of CPU devices only, not by the "
                                    "CUDA backend (device " + d.id + "): use --devices cpu:N");
  if (OneDevice(f)) {
    for (const char* flag : {"--speed", "--hetero", "--clock", "--clock-costs", "--row-cost", "--merge-cost",
                             "--batch-min", "--beta", "--momentum", "--pert-thr", "--pert-delta", "--pert-weights",
                             "--schedule", "--merge", "--collective", "--momentum-mode", "--elastic-alpha",
                             "--lr-scaling", "--preset", "--mega-batch-warmup"})
      if (f.given(flag))
        throw std::invalid_argument(std::string(flag) + " applies to several devices and --algo " + f.algo +
                                    " would ignore it: drop it, or choose --algo adaptive, elastic, adasum, sync or "
                                    "crossbow");
    return;
  }
  RefuseFlagsTheAlgorithmIgnores(f, plan.scheduling);
  if (f.preset != "default" && f.preset != "paper")
    throw std::invalid_argument("--preset must be default or paper, not '" + f.preset + "'");
  if (f.given("--lr-scaling")) ParseLrScaling(f.lr_scaling);
  if (f.given("--mega-batch-warmup") && f.mega_batch_warmup != "on" && f.mega_batch_warmup != "off")
    throw std::invalid_argument("--mega-batch-warmup must be on or off, not '" + f.mega_batch_warmup + "'");
  if (f.given("--pert-weights") && f.pert_weights != "normalized" && f.pert_weights != "raw")
    throw std::invalid_argument("--pert-weights must be normalized or raw, not '" + f.pert_weights + "'");
  scheduler::ValidateSchedulerOptions(plan.scheduling);
  if (plan.scheduling.batch_min > double(plan.options.batch)) {
    std::ostringstream text;
    text << "--batch-min " << plan.scheduling.batch_min << " is above --batch " << plan.options.batch << " (b_max)";
    throw std::invalid_argument(text.str());
  }
}

}  // namespace xmlt::apps
