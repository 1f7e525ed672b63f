// From the flags of `xmltrain train` to typed values: the parsers of single flags, each refusing a
// bad value with std::invalid_argument naming its flag, and the settings that the loaded data
// decides (the default hidden width, the presets, the memory plan). --algo is train_algorithm.h's;
// the checks before loading, train_flag_checks.h's.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "apps/train_flags.h"
#include "apps/train_plan.h"
#include "apps/train_presets.h"
#include "data/dataset.h"
#include "engine/device_spec.h"
#include "kernels/model.h"
#include "kernels/output_math.h"
#include "scheduler/memory_plan.h"

namespace xmlt::apps {

// --hidden: layer sizes, comma separated, each in 1..65536.
std::vector<uint32_t> ParseHidden(const std::string& text);

// --hidden auto: one layer, the largest power of two from 128 to 1024 that keeps (features +
// labels) x width within 2^27 parameters and is no wider than the features rounded up to a power
// of two (Bibtex, EURLEX57K: 1024; Delicious: 512; the Table 1 shapes: 128).
uint32_t DefaultHidden(uint64_t features, uint64_t labels);

// With the shortlist ranker, the MLP's job is mostly the shortlist the ranker re-scores (the
// held-out rows pick the linear model alone, or a blend of a = 0.8 or more, on EURLEX57K):
// --hidden auto is at most this wide, and an MLP narrowed by it trains this many epochs unless
// --epochs says otherwise. On EURLEX57K, 512 units for 30 epochs matched 1,024 for 20 in P@1, 3
// and 5 over three seeds, at 0.6 times the peak memory and 0.75 times the work
// (docs/experiments/mlp-for-the-ranker.md). Only where the full width is large enough for its
// memory and time to matter: (features + labels) x width above 2^24 parameters. Below it (Bibtex:
// 2 M at 1,024 units) the full width costs little, and Bibtex's P@1 moved by up to a point, in
// either direction, from seed to seed at 512.
constexpr uint32_t kShortlistMlpWidth = 512;
constexpr double kShortlistMlpEpochs = 30;
constexpr uint64_t kShortlistMlpFromParameters = uint64_t{1} << 24;

// The plan's model shape, from the training rows alone: --hidden, or with auto DefaultHidden of the
// rows' features and labels, at most kShortlistMlpWidth with the ranker (the plan's options.hidden
// too, and its epochs where that narrowed it). Refuses a shape the model cannot take.
void PlanShape(const TrainFlags& f, const data::Dataset& train, TrainPlan* plan);

// --eval-every: 'epoch', 'end' (or 0), or every N mega-batches.
scheduler::EvalSchedule ParseEvalEvery(const std::string& text);

// --math: refused here, before the data is loaded, where this build, CPU or device list cannot do
// it. GPUs take fp32, tf32 and bf16 (cuBLAS's compute types); CPUs fp32, and bf16 where they have
// native bf16. auto: bf16 where every device is such a CPU and the output is dense, else fp32.
kernels::OutputMath ParseOutputMath(const std::string& text, const std::vector<engine::DeviceSpec>& devices,
                                    bool sampled_output);

// The run's --math: ParseOutputMath's, except that a resume with --math auto keeps the checkpoint's
// math. auto resolves per device, so a run moved from a lost GPU (fp32) to CPUs with bf16 would
// otherwise change it and be refused for a flag the user never set. Where the new devices cannot
// compute the checkpoint's math (tf32 on CPUs), it is refused naming the checkpoint and --math.
kernels::OutputMath PlanOutputMath(const TrainFlags& f, const TrainPlan& plan, bool sampled_output);

// --optimizer-state, once the math is planned: whether the dense step, on CPUs and GPUs, keeps its
// momentum and Adagrad's squares in bf16. auto is bf16 where the output layer's products are (the
// state's rounding cost no accuracy there, docs/experiments/bf16-state.md; on GPUs that takes
// --math bf16), and on a resume the checkpoint's state, so that the resume stays exact. bf16 is
// refused without bf16 products or without a device of the dense step.
bool PlanBf16OptimizerState(const TrainFlags& f, const TrainPlan& plan, bool sampled_output);

// --weights, once the math and the algorithm are planned: whether the devices' dense step keeps
// their weights in bf16 with no fp32 copy (scheduler::MergesBf16Weights). auto is bf16 where the
// output products are and the merges run on the host (docs/experiments/bf16-state.md), and on a
// resume the checkpoint's choice where it can be kept, so that the resume stays exact. bf16 (given,
// or kept from the checkpoint) on GPUs alone moves their merges to the host; given, it is refused
// with --merge-on gpus or --collective nccl.
bool PlanBf16Weights(const TrainFlags& f, TrainPlan* plan, bool sampled_output);

// --algo slide's hash family, K and L where not given, in the plan's engine: SLIDE's published
// settings for an output layer of `labels` labels (engine::SampledOutputOptions::PresetFor); said
// on stderr when `say` (rank 0).
void ApplySampledOutputPreset(const TrainFlags& f, uint64_t labels, bool say, TrainPlan* plan);

// The multi-device knobs the user left unset, from --preset, into the plan, with how the learning
// rate scales with the device count (train_learning_rate.h's ScaleLearningRate applies it once the
// base rate is known).
void ApplyPreset(const TrainFlags& f, uint64_t training_rows, TrainPlan* plan);

// Before the model and the replicas are allocated: fails now, with the numbers, when the run does
// not fit this machine (a usage error: a smaller --batch, fewer devices, or the data's declared
// sizes, a header's D and L, are the fix). `ranker` is the ranker's stage after training
// (train_ranker.h's PlanRanker; zeros without one), which the plan counts as the peak it is once
// training's memory is freed. `rank`: this process's, across ranks. Returns the planned host memory.
uint64_t CheckMemoryPlan(const TrainFlags& f, const TrainPlan& plan, const data::Dataset& train, int rank,
                         const scheduler::RankerMemory& ranker = {});

}  // namespace xmlt::apps
