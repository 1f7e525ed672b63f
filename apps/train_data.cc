// The data of one `xmltrain train` run; see train_data.h.
#include "apps/train_data.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <stdexcept>

#include "apps/cli.h"
#include "apps/command_input.h"
#include "data/input_error.h"
#include "data/row_normalization.h"
#include "kernels/propensity.h"

namespace xmlt::apps {
namespace {

float LargestMagnitude(const data::CsrMatrix& features) {
  float largest = features.nnz() > 0 && features.binary() ? 1.0f : 0.0f;
  for (float v : features.values) largest = std::max(largest, std::fabs(v));
  return largest;
}

}  // namespace

namespace {

// Where the readers' warnings go: the session's list, or stderr on rank 0.
Warnings WarningsOf(const TrainSession& session, ranks::RankGroup* ranks) {
  return session.warnings != nullptr ? Warnings::Into(session.warnings) : Warnings(ranks->rank() == 0);
}

}  // namespace

TrainingData LoadTrainingRows(const TrainFlags& f, const TrainSession& session, ranks::RankGroup* ranks) {
  using Clock = std::chrono::steady_clock;
  const Clock::time_point load_start = Clock::now();
  if (f.normalize != "l2" && f.normalize != "none") throw std::invalid_argument("--normalize must be l2 or none");
  TrainingData loaded;
  loaded.train =
      session.train ? *session.train : LoadWithWarnings(f.train, f.train_labels, f.data, WarningsOf(session, ranks));
  loaded.load_seconds = std::chrono::duration<double>(Clock::now() - load_start).count();
  return loaded;
}

void LoadTestRows(const TrainFlags& f, const TrainSession& session, ranks::RankGroup* ranks, const TrainPlan& plan,
                  TrainingData* loaded) {
  using Clock = std::chrono::steady_clock;
  const Clock::time_point load_start = Clock::now();
  const Warnings warnings = WarningsOf(session, ranks);
  // A test row with a label or feature id the training data does not have is scored as eval
  // scores it (ids beyond the model left out).
  if (session.test || !f.test.empty()) {
    loaded->test = std::make_unique<data::Dataset>(
        AsModelInput(session.test ? *session.test : LoadWithWarnings(f.test, f.test_labels, f.data, warnings),
                     plan.shape, f.test, warnings));
    // Scores of rows without labels would be means over nothing, printed as zeros (eval refuses it too).
    if (loaded->test->labels.nnz() == 0)
      throw data::InputError(f.test, 0, "no row has a label: nothing to evaluate (leave out --test, or give a "
                                        "labelled test set)");
    WarnUnlabelledEvaluationRows(*loaded->test, f.test, warnings);
  }
  if (plan.shape.normalize_rows) loaded->train = data::NormalizeRowsL2(loaded->train);
  loaded->largest_raw_value = f.normalize == "none" ? LargestMagnitude(loaded->train.features) : 0.0f;
  // The test rows are also scored with the propensity-scored metrics, the propensities from the
  // training labels.
  if (loaded->test && loaded->train.num_rows() >= 2) {
    const uint64_t labels = std::max<uint64_t>(loaded->test->num_labels(), plan.shape.num_labels);
    loaded->test->inverse_propensity =
        data::SharedArray<float>(kernels::InversePropensities(loaded->train.labels, labels, plan.options.propensity));
  }
  loaded->load_seconds += std::chrono::duration<double>(Clock::now() - load_start).count();
}

}  // namespace xmlt::apps
