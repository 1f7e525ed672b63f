// From the flags of `xmltrain train` to checked, typed options: each parser refuses a bad value
// with std::invalid_argument naming its flag.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "apps/train_flags.h"
#include "apps/train_presets.h"
#include "data/dataset.h"
#include "engine/device_spec.h"
#include "kernels/model.h"
#include "kernels/output_math.h"
#include "ranks/rank_group.h"

namespace xmlt::apps {

// --hidden: layer sizes, comma separated, each in 1..65536.
std::vector<uint32_t> ParseHidden(const std::string& text);

// --hidden auto: one layer, the largest power of two from 128 to 1024 that keeps (features +
// labels) x width within 2^27 parameters and is no wider than the features rounded up to a power
// of two (Bibtex, EURLEX57K: 1024; Delicious: 512; the Table 1 shapes: 128).
uint32_t DefaultHidden(uint64_t features, uint64_t labels);

// The step's defaults, which every device implements: dropout 0.5 unless --dropout is given, and
// --input-optimizer auto as adagrad (into options.input_lr); refuses a bad --input-optimizer, or
// --input-lr without Adagrad.
void SettleStepDefaults(TrainFlags& f);

// --eval-every: 'epoch', 'end' (or 0), or every N mega-batches.
scheduler::EvalSchedule ParseEvalEvery(const std::string& text);

// A positive finite number, or std::invalid_argument naming the flag.
float ParsePositive(const char* flag, const std::string& text);

// --math: refused here, before the data is loaded, where this build, CPU or device list cannot do
// it. GPUs take fp32, tf32 and bf16 (cuBLAS's compute types); CPUs fp32, and bf16 where they have
// native bf16. auto: bf16 where every device is such a CPU and the output is dense, else fp32.
kernels::OutputMath ParseOutputMath(const std::string& text, const std::vector<engine::DeviceSpec>& devices,
                                    bool sampled_output);

// --algo single and slide train one device; the others several.
bool OneDevice(const TrainFlags& f);

// --algo presets set how batches are dispatched and merged; --schedule, --merge and
// --local-momentum given explicitly override them, so any combination can be swept.
void ApplyAlgorithm(TrainFlags& f);

// A GPU of this rank's that is not there, said before the data is loaded (minutes at full size).
void CheckGpusExist(const TrainFlags& f);

// Flags that need no data are checked before the data is loaded (minutes at full size): the
// training options as given, the multi-device ones, and flags that --algo single would ignore.
void CheckFlagsBeforeLoading(TrainFlags& f);

// --algo slide's hash family, K and L where not given: SLIDE's published settings for an output
// layer of `labels` labels (engine::SampledOutputOptions::PresetFor); said on stderr.
void ApplySampledOutputPreset(TrainFlags& f, uint64_t labels);

// The multi-device knobs the user left unset, from --preset; returns how the learning rate scales
// with the device count (train_learning_rate.h's ScaleLearningRate applies it once the base rate is known).
LrScaling ApplyPreset(TrainFlags& f, uint64_t training_rows);

// Under an MPI launcher one run spans every rank: --devices names each rank's own devices, the run
// has all of them, rank after rank (--speed and --hetero cover them all, in that order), and rank
// 0 alone writes the metrics, the model, the checkpoints and the summary.
void SpreadOverRanks(TrainFlags& f, ranks::RankGroup* ranks);

// Before the model and the replicas are allocated: fails now, with the numbers, when the run does
// not fit this machine (a usage error: a smaller --batch, fewer devices, or the data's declared
// sizes, a header's D and L, are the fix). Returns the planned host memory.
uint64_t CheckMemoryPlan(const TrainFlags& f, const kernels::ModelShape& shape, const data::Dataset& train);

}  // namespace xmlt::apps
