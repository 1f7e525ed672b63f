// What `xmltrain eval` computes once its files are read: the figures of a model on labelled rows,
// with the propensity-scored ones when the training labels are given. The Python package's
// Model.evaluate calls the same with its matrices.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "apps/command_input.h"
#include "data/dataset.h"
#include "engine/trained_model.h"
#include "kernels/model.h"
#include "kernels/propensity.h"

namespace xmlt::apps {

// `test` as read (AsModelInput is applied here); `train_labels` null: no PSP@k. The names say
// where the rows came from in messages and warnings. Returns {"rows", p1.., "loss"} as eval prints.
nlohmann::json EvaluateModel(const engine::TrainedModel& model, const data::Dataset& test,
                             const std::string& test_name, const data::CsrMatrix* train_labels,
                             const std::string& train_name, const kernels::PropensityModel& propensity,
                             Warnings warnings = true);

}  // namespace xmlt::apps
