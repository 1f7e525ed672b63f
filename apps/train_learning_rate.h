// The learning rates of `xmltrain train`. A bad --lr or --input-lr is refused before the data is
// loaded; once it is loaded, the run's rates are written once (ScaleLearningRate): a resumed run's
// checkpointed rate, or --lr's number (its default for the algorithm) or the --lr auto search's
// pick, scaled for the device count; and the first layer's Adagrad rate, damped by the global
// momentum.
#pragma once

#include <cstddef>
#include <nlohmann/json.hpp>
#include <optional>

#include "apps/train_flags.h"
#include "apps/train_plan.h"
#include "apps/train_presets.h"
#include "data/dataset.h"
#include "kernels/model.h"
#include "scheduler/train_options.h"

namespace xmlt::apps {

// --lr's number, or the algorithm's default when it is not given; nullopt for 'auto'. Anything
// else is refused with std::invalid_argument naming --lr.
std::optional<float> GivenLearningRate(const TrainFlags& f);

// The first layer's Adagrad rate as given: --input-lr with --input-optimizer auto or adagrad, 0
// with sgd. Refuses a bad --input-optimizer, or an --input-lr that is not positive or has no
// Adagrad to set, with std::invalid_argument naming the flag.
float GivenInputLearningRate(const TrainFlags& f);

// The plan's options with the first layer's rate as given, for what reads them before
// ScaleLearningRate writes the rates: the ranks' agreement, the memory plan and the --lr auto
// search (on one device, whose Adagrad rate is not damped).
scheduler::TrainOptions OptionsWithGivenInputRate(const TrainFlags& f, const TrainPlan& plan);

// The rate a resumed run goes on at, scaled already for the devices it trained on; nullopt when
// the run is not resumed, when --lr gives a number, or when the checkpoint has none for these
// devices (CheckpointedLearningRate).
std::optional<float> ResumedLearningRate(const TrainFlags& f, const TrainPlan& plan);

// --lr auto: the rate short runs on a slice of the training rows pick, for one device's batch and
// the plan's model shape, with what the summary reports of the search ("lr_search"); said on stderr when `say` (rank
// 0).
struct LrSearchPick {
  float lr = 0;
  nlohmann::json report;
};
LrSearchPick SearchBaseLearningRate(const TrainFlags& f, const TrainPlan& plan, const data::Dataset& train,
                                    size_t ranks, bool say);

// The one write of the plan's options.lr and options.input_lr. `rate` is a resumed run's
// (`resumed`: scaled already, for these devices), or --lr's or the search's, which is for one
// device's batch: several devices train with it scaled by the plan's lr_scaling. The first layer's rate is
// GivenInputLearningRate's, damped on several devices by the global momentum. Said on stderr with the preset's values,
// so that every run shows what it trains with, when `say` (rank 0 speaks for the run).
void ScaleLearningRate(const TrainFlags& f, float rate, bool resumed, bool say, TrainPlan* plan);

}  // namespace xmlt::apps
