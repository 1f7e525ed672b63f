// The shortlist ranker in a `xmltrain train` run: its flags decided into the plan before the data
// is loaded;
// once it is, rank 0's plan (run/ranker_plan.h) said and shared and the held-out rows taken from
// the training rows; after training, the stage (run/ranker_stage.h) run, the final model scored on
// the test rows, and the line and summary that report it.
#pragma once

#include <atomic>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>

#include "apps/train_data.h"
#include "apps/train_flags.h"
#include "apps/train_plan.h"
#include "engine/evaluator.h"
#include "engine/trained_model.h"
#include "kernels/model.h"
#include "ranks/rank_group.h"
#include "scheduler/memory_plan.h"

namespace xmlt::apps {

// --ranker, --ranker-blend, -holdout, -shortlist, -passes into the plan's ranker; throws
// std::invalid_argument for a bad value. --preset paper trains the paper's MLP alone unless
// --ranker is given.
void PlanRankerOptions(const TrainFlags& f, TrainPlan* plan);

// Holds out the rows --ranker-blend auto chooses on (run::HoldoutRows of the training rows, drawn
// from --seed): data->holdout gets them and data->train keeps the rest, so neither model trains on
// them. Before that, rank 0 plans the ranker (run::PlanRanker, for the plan's model shape;
// data->ranker_pairs) for every rank: one of more pairs than run::kMaxRankerPairs, or whose stage
// after training needs more host memory than is available (scheduler::AvailableMemory), is not
// fitted (the plan's ranker is disabled), said on stderr, and no row is held out.
void HoldOutRankerRows(TrainingData* data, ranks::RankGroup* ranks, TrainPlan* plan);

// The memory plan's figure for the ranker's stage after training, on the rank that fits it
// (`here`; zeros elsewhere, and without a ranker).
scheduler::RankerMemory PlannedRankerMemory(const TrainPlan& plan, const TrainingData& data, bool here);

struct RankerOutcome {
  engine::TrainedModel model;               // the MLP, with the ranker when its blend is above 0
  bool stopped = false;                     // a stop ended the stage: the MLP alone
  run::RankerStageReport report;
  std::optional<engine::Evaluation> test;   // the final model on the run's last test rows
  double seconds = 0;                       // the stage and that evaluation
};

// After training, on rank 0: the stage (when plan.ranker.enabled), then the final model on
// the test rows of the run's last evaluation; `say` writes a line about it on stderr. `stopped`
// (the run's stop) is asked within the stage: once true, it ends with `stopped` and the MLP alone.
// A training set too small to hold rows out (run::BlendFolds > 0) has its blend chosen by folds
// first: each fold's MLP trains as the run did (the plan's options and engine; after a run of several
// ranks, on host CPU devices of the run's count and speeds), without evaluations, metrics or
// checkpoints, stopping on `stop_signal` as the run did.
RankerOutcome FitRanker(const TrainPlan& plan, const TrainingData& data, kernels::Model<float> mlp, bool say,
                        const std::function<bool()>& stopped = {}, const std::atomic<int>* stop_signal = nullptr);

// The summary's part: "ranker" (what the stage did and chose), the top-level test figures replaced
// by the final model's (the MLP's last evaluation kept as "mlp"), its time added to wall_time_s.
void AddRankerSummary(const TrainPlan& plan, const RankerOutcome& outcome, nlohmann::json* summary);

}  // namespace xmlt::apps
