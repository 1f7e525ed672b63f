// What `xmltrain train` says: a line on stdout per evaluation, the learning-rate search on stderr,
// and the run's summary, one JSON line on stdout.
#pragma once

#include <nlohmann/json.hpp>

#include "engine/device_spec.h"
#include "kernels/model.h"
#include "run/lr_search.h"
#include "run/metrics_log.h"
#include "run/trainer.h"

namespace xmlt::apps {

// One evaluation's line on stdout.
void PrintEval(const run::EvalRecord& r);

// --lr auto: the pick and every candidate's held-out P@1 on `device`, said on stderr when `say`
// (rank 0); returns the same as the summary's "lr_search".
nlohmann::json ReportLrSearch(const run::LrSearchResult& search, const engine::DeviceSpec& device, bool say);

// The summary's figures of a finished run (`has_test`: with the last evaluation's test metrics);
// the caller adds the files it wrote.
nlohmann::json TrainSummary(const kernels::ModelShape& shape, const run::TrainResult& result, double load_seconds,
                            bool has_test);

}  // namespace xmlt::apps
