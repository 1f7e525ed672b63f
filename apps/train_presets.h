// The values a multi-device run takes for the knobs the user leaves unset: `--preset default`
// (rules measured on real data, so that --algo and --devices alone give a model as good as one
// device's) or `--preset paper` (the Adaptive SGD paper's section 5.1, for reproducing it).
// Flags given on the command line always win over either.
#pragma once

#include <cstdint>
#include <string>

namespace xmlt::apps {

// How a learning rate given for one device's batch grows with the number of devices n.
enum class LrScaling { kNone, kSqrt, kLinear };
LrScaling ParseLrScaling(const std::string& text);  // none, sqrt or linear
const char* LrScalingName(LrScaling scaling);
double LrScalingFactor(LrScaling scaling, size_t devices);

struct PresetValues {
  double momentum = 0.9;        // --momentum: gamma of the global update
  float local_momentum = 0.9f;  // --local-momentum
  uint32_t mega_batch = 100;    // --mega-batch
  bool mega_batch_warmup = false;  // --mega-batch-warmup on (true) or off
  LrScaling lr_scaling = LrScaling::kNone;  // --lr-scaling
  bool pert_renormalize = true;  // --pert-weights normalized (true) or raw
};

// `algo` is adaptive, elastic, adasum, sync or crossbow; `batches_per_epoch` is the training
// rows over --batch, rounded up.
PresetValues DefaultPreset(const std::string& algo, size_t devices, uint64_t batches_per_epoch);
PresetValues PaperPreset();  // the same for every algorithm

// The two presets side by side with the reason for each value, for --help and the README.
std::string PresetTable();

}  // namespace xmlt::apps
