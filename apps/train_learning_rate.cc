// The learning rates of `xmltrain train`; see train_learning_rate.h.
#include "apps/train_learning_rate.h"

#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <iostream>
#include <limits>
#include <stdexcept>
#include <string>

#include "apps/checkpoint_folder.h"
#include "apps/shortest_text.h"
#include "apps/train_algorithm.h"
#include "apps/train_report.h"
#include "engine/device_spec.h"
#include "engine/sampled_output.h"
#include "run/lr_search.h"

namespace xmlt::apps {
namespace {

// A positive finite number, or std::invalid_argument naming the flag. A positive number a float
// cannot hold (1e-300 would be 0) is told as such, not as "not a positive number".
float ParsePositive(const char* flag, const std::string& text) {
  const char* begin = text.c_str();
  char* end = nullptr;
  errno = 0;
  const double value = std::strtod(begin, &end);
  const bool range_error = errno == ERANGE;
  const bool number = !text.empty() && !std::isspace(static_cast<unsigned char>(text[0])) && *end == '\0';
  if (!number || std::signbit(value) || std::isnan(value) || (value == 0 && !range_error))
    throw std::invalid_argument(std::string(flag) + " must be a positive number or 'auto', not '" + text + "'");
  if (value < double(std::numeric_limits<float>::min()))
    throw std::invalid_argument(std::string(flag) + " " + text + " is below the smallest positive number it can be (" +
                                ShortestText(std::numeric_limits<float>::min()) + ")");
  if (value > double(std::numeric_limits<float>::max()))
    throw std::invalid_argument(std::string(flag) + " " + text + " is beyond the largest number it can be (" +
                                ShortestText(std::numeric_limits<float>::max()) + ")");
  return float(value);
}

}  // namespace

std::optional<float> GivenLearningRate(const TrainFlags& f) {
  if (f.lr == "auto") return std::nullopt;
  // --algo slide steps with plain SGD, which needs a larger step than the momentum the other
  // algorithms use: on Bibtex, 1 reaches P@1 0.565 in 40 epochs (0.3: 0.23 in 10, 2 and more overfit).
  if (f.algo == "slide" && !f.given("--lr")) return 1.0f;
  return ParsePositive("--lr", f.lr);
}

float GivenInputLearningRate(const TrainFlags& f) {
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
  return adagrad ? f.input_lr : 0.0f;
}

scheduler::TrainOptions OptionsWithGivenInputRate(const TrainFlags& f, const TrainPlan& plan) {
  scheduler::TrainOptions options = plan.options;
  options.input_lr = GivenInputLearningRate(f);
  return options;
}

std::optional<float> ResumedLearningRate(const TrainFlags& f, const TrainPlan& plan) {
  // A resume goes on at the checkpoint's rate unless --lr gives a number (checkpoint_folder.h).
  if (plan.control.resume_dir.empty() || (f.lr != "auto" && f.given("--lr"))) return std::nullopt;
  return CheckpointedLearningRate(plan.control.resume_dir, plan.scheduling.devices);
}

LrSearchPick SearchBaseLearningRate(const TrainFlags& f, const TrainPlan& plan, const data::Dataset& train,
                                    size_t ranks, bool say) {
  const engine::DeviceSpec search_device = run::LrSearchDevice(plan.scheduling.devices, ranks);
  // --algo slide searches with its sampled step; --cpu-output sampled with the dense step, whose
  // rate the run's dense devices take (its sampled devices scale it, ScaleLearningRate).
  const run::LrSearchResult search =
      run::SearchLearningRate(train, plan.shape, OptionsWithGivenInputRate(f, plan), search_device,
                              f.algo == "slide" ? plan.scheduling.sampled_output : engine::SampledOutputOptions{});
  LrSearchPick pick;
  pick.report = ReportLrSearch(search, search_device, say);
  pick.lr = float(search.picked);
  return pick;
}

void ScaleLearningRate(const TrainFlags& f, float rate, bool resumed, bool say, TrainPlan* plan) {
  const LrScaling scaling = plan->lr_scaling;
  const size_t devices = plan->scheduling.devices.size();
  const bool scaled = !resumed && !OneDevice(f);
  plan->options.lr = scaled ? float(double(rate) * LrScalingFactor(scaling, devices)) : rate;
  // The first layer's Adagrad rate is not scaled with the devices: its steps are per-coordinate
  // sizes, not a share of a gradient (Bibtex, 4 devices, best P@1: adaptive 0.647 and elastic 0.644
  // unscaled, 0.617 and 0.611 with the rate x 4; one device 0.638). A global momentum gamma
  // amplifies every merged step 1 / (1 - gamma), Adagrad's too, which has no momentum on one
  // device: it takes (1 - gamma) of the rate (sync 0.643 and Adasum 0.631 at gamma 0.9; Adasum at
  // the full rate 0.340).
  const float input_lr = GivenInputLearningRate(f);
  plan->options.input_lr = OneDevice(f) ? input_lr : float(double(input_lr) * (1.0 - plan->scheduling.merge_rule.momentum));
  if (OneDevice(f)) return;
  if (!say) return;
  std::cerr << "preset " << f.preset << " for " << f.algo << " on " << devices << " devices: --momentum "
            << plan->scheduling.merge_rule.momentum << " --local-momentum " << plan->options.local_momentum
            << (plan->scheduling.sampled_output.enabled ? " (none on the sampled CPU devices: plain SGD at lr / (1 - it))"
                                                    : "")
            << " --mega-batch " << plan->options.mega_batch
            << (plan->options.mega_batch_warmup ? " (warming up from one batch a device)" : "") << " --lr "
            << plan->options.lr;
  if (resumed)
    std::cerr << " (the checkpoint's)";
  else
    std::cerr << " (" << rate << " scaled " << LrScalingName(scaling) << ")";
  // The perturbation is the normalized merge's alone: elastic, adasum, sync and crossbow have none.
  if (plan->scheduling.merge == scheduler::SchedulerOptions::Merge::kNormalized)
    std::cerr << " --pert-weights " << (plan->scheduling.merge_rule.renormalize_perturbed ? "normalized" : "raw");
  std::cerr << "\n";
}

}  // namespace xmlt::apps
