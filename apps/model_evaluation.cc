// A model's figures on labelled rows; see model_evaluation.h.
#include "apps/model_evaluation.h"

#include <algorithm>
#include <string>
#include <stdexcept>
#include <vector>

#include "apps/cli.h"
#include "apps/propensity_flag.h"
#include "data/input_error.h"
#include "engine/evaluator.h"

namespace xmlt::apps {
namespace {

// Most test label occurrences on labels the training file never has: likely not the model's
// training data (the propensities of unseen labels are all the largest weight).
void WarnUnseenTestLabels(const data::CsrMatrix& train_labels, const data::Dataset& test,
                          const std::string& train_name, const std::string& test_name, const Warnings& warnings) {
  std::vector<bool> seen(train_labels.num_cols, false);
  for (uint64_t e = 0; e < train_labels.nnz(); ++e) seen[train_labels.col_idx[e]] = true;
  uint64_t unseen = 0;
  for (uint64_t e = 0; e < test.labels.nnz(); ++e) {
    const uint32_t label = test.labels.col_idx[e];
    unseen += label >= seen.size() || !seen[label];
  }
  if (2 * unseen > test.labels.nnz())
    warnings(std::to_string(unseen) + " of the " + std::to_string(test.labels.nnz()) + " labels of " + test_name +
             " never occur in " + train_name + ": is it the model's training data?");
}

}  // namespace

nlohmann::json EvaluateModel(const engine::TrainedModel& model, const data::Dataset& rows,
                             const std::string& test_name, const data::CsrMatrix* train_labels,
                             const std::string& train_name, const kernels::PropensityModel& propensity,
                             Warnings warnings) {
  data::Dataset test = AsModelInput(rows, model.mlp.shape, test_name, warnings);
  // Scores of rows without labels would be means over nothing, printed as zeros.
  if (test.labels.nnz() == 0)
    throw data::InputError(test_name, 0, "no row has a label: nothing to evaluate (predict labels rows that have none)");
  WarnUnlabelledEvaluationRows(test, test_name, warnings);
  // The propensities come from the training labels, as the XML repository's tools take them.
  if (train_labels != nullptr) {
    if (train_labels->num_rows < 2) throw std::invalid_argument(train_name + " has fewer than 2 rows");
    // The model's training data has its labels: another file's counts would weigh the wrong ones.
    if (train_labels->num_cols != model.mlp.shape.num_labels)
      throw data::InputError(train_name, 0,
                             "has " + std::to_string(train_labels->num_cols) + " labels, the model " +
                                 std::to_string(model.mlp.shape.num_labels) +
                                 ": the propensities must come from the data the model was trained on");
    WarnUnseenTestLabels(*train_labels, test, train_name, test_name, warnings);
    test.inverse_propensity = data::SharedArray<float>(kernels::InversePropensities(
        *train_labels, std::max<uint64_t>(test.num_labels(), model.mlp.shape.num_labels), propensity));
  }
  const engine::Evaluation e = engine::Evaluate(model, test);
  nlohmann::json result = {{"rows", e.rows}};
  result.update(TopKMetricsJson(e.metrics));
  result["loss"] = e.loss;
  return result;
}

}  // namespace xmlt::apps
