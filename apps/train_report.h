// What `xmltrain train` says: the model and the step it trains with on stderr, a line on stdout per
// evaluation, the learning-rate search on stderr, and the run's summary, one JSON line on stdout.
#pragma once

#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>

#include "apps/train_data.h"
#include "apps/train_flags.h"
#include "apps/train_plan.h"
#include "engine/device_spec.h"
#include "kernels/model.h"
#include "run/lr_search.h"
#include "run/metrics_log.h"
#include "run/one_device_run.h"

namespace xmlt::apps {

// One evaluation's line on stdout, its training time labelled with its clock ("train 0.20 virtual s").
void PrintEval(const run::EvalRecord& r, bool virtual_clock);

// --lr auto: the pick and every candidate's held-out P@1 on `device`, said on stderr when `say`
// (rank 0); returns the same as the summary's "lr_search".
nlohmann::json ReportLrSearch(const run::LrSearchResult& search, const engine::DeviceSpec& device, bool say);

// The run's first lines on stderr, once its model is made (the caller's rank 0 says them): the
// model, the data and the planned host memory, the devices; then the step it trains with.
void SayModelAndStep(const TrainFlags& f, const TrainPlan& plan, const TrainingData& data, size_t ranks);

// The summary of a finished run: its figures (with the last evaluation's test metrics when it has
// a test set), the files it wrote, the learning-rate search (`lr_search`, when not null) and how
// it trained.
nlohmann::json TrainSummary(const TrainFlags& f, const TrainPlan& plan, const TrainingData& data,
                            const run::TrainResult& result, const nlohmann::json& lr_search);

}  // namespace xmlt::apps
