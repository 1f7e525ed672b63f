// The shortlist ranker's stage after training; see ranker_stage.h.
#include "run/ranker_stage.h"

#include <tbb/enumerable_thread_specific.h>
#include <tbb/parallel_for.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <stdexcept>

#include "engine/evaluator.h"

namespace xmlt::run {
namespace {

using Clock = std::chrono::steady_clock;

double SecondsSince(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

// The held-out rows' draw is its own: other samples of the run (evaluation rows, the sampler) use
// the seed as it is.
constexpr uint64_t kHoldoutSeedSalt = 0x686f6c646f7574ULL;  // "holdout"

}  // namespace

uint64_t HoldoutRows(const RankerOptions& options, uint64_t rows) {
  if (!options.enabled || !options.choose_blend()) return 0;
  const uint64_t share = uint64_t(std::llround(options.holdout * double(rows)));
  const uint64_t held_out = std::min(share, kMaxHoldoutRows);
  return held_out < kMinHoldoutRows || held_out >= rows ? 0 : held_out;
}

HoldoutSplit SplitHoldout(uint64_t rows, uint64_t held_out, uint64_t seed) {
  HoldoutSplit split;
  if (held_out == 0) {
    split.kept = engine::SampleEvalRows(rows, 0, 0);
    return split;
  }
  split.held_out = engine::SampleEvalRows(rows, held_out, seed ^ kHoldoutSeedSalt);
  split.kept.reserve(rows - held_out);
  size_t next = 0;
  for (uint64_t r = 0; r < rows; ++r) {
    if (next < split.held_out.size() && split.held_out[next] == r) {
      ++next;
      continue;
    }
    split.kept.push_back(r);
  }
  return split;
}

uint64_t RankerPairBound(const data::Dataset& train) {
  const data::CsrMatrix &x = train.features, &y = train.labels;
  const uint64_t features = train.num_features(), labels = train.num_labels();
  std::vector<uint64_t> by_label(labels, 0), by_feature(features, 0);
  for (uint64_t r = 0; r < train.num_rows(); ++r) {
    for (uint64_t j = y.RowBegin(r); j < y.RowEnd(r); ++j)
      if (y.col_idx[j] < labels) by_label[y.col_idx[j]] += x.RowSize(r);
    for (uint64_t j = x.RowBegin(r); j < x.RowEnd(r); ++j)
      if (x.col_idx[j] < features) by_feature[x.col_idx[j]] += y.RowSize(r);
  }
  uint64_t label_side = 0, feature_side = 0;
  for (const uint64_t n : by_label) label_side += std::min(n, features);
  for (const uint64_t n : by_feature) feature_side += std::min(n, labels);
  return std::min(label_side, feature_side);
}

uint64_t CountRankerPairs(const data::Dataset& train, uint64_t limit) {
  const uint64_t bound = RankerPairBound(train);
  return bound <= limit ? bound : kernels::CountLinearRankerPairs(train);
}

RankerStageResult TrainShortlistRanker(const kernels::Model<float>& mlp, const data::Dataset& train,
                                       const data::Dataset* holdout, const RankerOptions& options,
                                       const std::function<bool()>& stopped, const BlendChoice* chosen,
                                       const ShortlistDevices& where) {
  // The ranker's features and labels are the MLP's: checked before anything is built.
  if (train.num_features() != mlp.shape.num_features || train.num_labels() != mlp.shape.num_labels)
    throw std::invalid_argument("the ranker's training rows do not have the model's features and labels");
  RankerStageResult result;
  RankerStageReport& report = result.report;
  const uint32_t shortlist = uint32_t(std::min<uint64_t>(options.shortlist, mlp.shape.num_labels));

  const auto stop_now = [&] { return stopped && stopped(); };
  if (chosen != nullptr && chosen->blend <= 0) {
    report.choice = *chosen;  // the MLP alone: nothing to solve
    return result;
  }
  Clock::time_point start = Clock::now();
  const std::vector<uint32_t> shortlists =
      ShortlistsOnDevices(where, mlp, train, shortlist, stopped, &report.device_faults);
  report.shortlist_seconds = SecondsSince(start);
  if (stop_now()) {
    result.stopped = true;
    return result;
  }

  start = Clock::now();
  auto ranker = std::make_shared<kernels::ShortlistRanker>();
  ranker->shortlist = shortlist;
  ranker->linear = kernels::BuildLinearRanker(train, kMaxRankerPairs);
  report.pairs = ranker->linear.num_pairs();
  report.dense_features = kernels::AddDenseLookups(&ranker->linear, kernels::kRankerDenseLookupBytes);
  report.build_seconds = SecondsSince(start);

  kernels::RankerDualOptions solver;
  solver.max_passes = options.passes;
  solver.stopped = stopped;
  bool solved_before = false;
  // Solves `labels` (all when null); false when a stop ended it.
  const auto solve = [&](const std::vector<uint8_t>* labels) {
    const Clock::time_point solve_start = Clock::now();
    solver.labels = labels;
    const kernels::RankerDualReport part =
        kernels::TrainRankerDual(&ranker->linear, train.features, train.labels, shortlists.data(), shortlist, solver);
    report.solver = solved_before ? kernels::CombineRankerDualReports(report.solver, part) : part;
    solved_before = true;
    report.train_seconds += SecondsSince(solve_start);
    return !(part.stopped || stop_now());
  };

  if (!options.choose_blend() || chosen != nullptr) {
    if (!solve(nullptr)) {
      result.stopped = true;
      return result;
    }
    // A fixed blend takes the form that won the choice on Bibtex, Delicious and EURLEX57K
    // (docs/experiments/peers.md).
    ranker->form = chosen != nullptr ? chosen->form : kernels::BlendForm::kGeometric;
    ranker->blend = chosen != nullptr ? chosen->blend : options.blend;
    if (chosen != nullptr) report.choice = *chosen;
    if (ranker->blend > 0) result.ranker = std::move(ranker);
    return result;
  }

  if (holdout == nullptr || holdout->num_rows() == 0) throw std::invalid_argument("the blend is chosen on held-out rows: none given");
  report.holdout_rows = holdout->num_rows();
  start = Clock::now();
  const engine::Prediction mlp_top = engine::Predict(mlp, *holdout, shortlist, stopped);
  if (stop_now()) {
    result.stopped = true;
    return result;
  }
  // The labels the held-out rows' blend reads, solved first; the rest after, if the blend is not 0.
  const uint64_t num_labels = ranker->linear.num_labels;
  std::vector<uint8_t> read(num_labels, 0);
  for (const uint32_t label : mlp_top.labels)
    if (label < num_labels) read[label] = 1;
  report.choice_seconds = SecondsSince(start);
  if (!solve(&read)) {
    result.stopped = true;
    return result;
  }
  start = Clock::now();
  std::vector<float> linear_scores(mlp_top.labels.size());
  tbb::enumerable_thread_specific<kernels::RankerScratch> scratches;
  tbb::parallel_for(uint64_t(0), holdout->num_rows(), [&](uint64_t r) {
    kernels::RankerScores(ranker->linear, holdout->features, r, mlp_top.labels.data() + r * shortlist, shortlist,
                          linear_scores.data() + r * shortlist, &scratches.local());
  });
  report.choice = ChooseBlend(holdout->labels, mlp_top.labels.data(), mlp_top.scores.data(),
                                       linear_scores.data(), shortlist);
  ranker->form = report.choice.form;
  ranker->blend = report.choice.blend;
  report.choice_seconds += SecondsSince(start);
  std::vector<uint8_t> rest(num_labels, 0);
  uint64_t left = 0;
  for (uint64_t l = 0; l < num_labels; ++l) left += rest[l] = read[l] ? 0 : 1;
  if (ranker->blend <= 0) {
    report.labels_skipped = left;  // the MLP alone: the other labels' weights would not be read
    return result;
  }
  if (left > 0 && !solve(&rest)) {
    result.stopped = true;
    return result;
  }
  result.ranker = std::move(ranker);
  return result;
}

}  // namespace xmlt::run
