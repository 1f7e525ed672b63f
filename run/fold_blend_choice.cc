// The ranker's blend chosen by folds; see fold_blend_choice.h.
#include "run/fold_blend_choice.h"

#include <tbb/enumerable_thread_specific.h>
#include <tbb/parallel_for.h>

#include <algorithm>
#include <chrono>
#include <random>
#include <stdexcept>

#include "data/row_subset.h"
#include "engine/evaluator.h"
#include "kernels/ranker/shortlist_ranker.h"

namespace xmlt::run {
namespace {

// The folds' draw is their own: the run's other samples use the seed as it is.
constexpr uint64_t kFoldSeedSalt = 0x666f6c6473ULL;  // "folds"

}  // namespace

uint32_t BlendFolds(const RankerOptions& options, uint64_t rows) {
  if (!options.enabled || !options.choose_blend() || HoldoutRows(options, rows) > 0) return 0;
  return rows >= kMinFoldRows ? kBlendFolds : 0;
}

std::vector<std::vector<uint64_t>> SplitFolds(uint64_t rows, uint32_t folds, uint64_t seed) {
  if (folds == 0 || folds > rows) throw std::invalid_argument("cannot cut " + std::to_string(rows) + " rows into " +
                                                              std::to_string(folds) + " folds");
  std::vector<uint64_t> order(rows);
  for (uint64_t i = 0; i < rows; ++i) order[i] = i;
  // Fisher-Yates on mt19937_64's own outputs: the same draw with every standard library.
  std::mt19937_64 random(seed ^ kFoldSeedSalt);
  for (uint64_t i = rows - 1; i > 0; --i) std::swap(order[i], order[random() % (i + 1)]);
  std::vector<std::vector<uint64_t>> result(folds);
  for (uint64_t i = 0; i < rows; ++i) result[i % folds].push_back(order[i]);
  for (std::vector<uint64_t>& fold : result) std::sort(fold.begin(), fold.end());
  return result;
}

FoldBlendChoice ChooseBlendByFolds(const data::Dataset& train, const RankerOptions& options, uint64_t seed,
                                   const FoldMlpTrainer& train_mlp, bool scoring,
                                   const std::function<bool()>& stopped) {
  const auto start = std::chrono::steady_clock::now();
  FoldBlendChoice result;
  result.rows = train.num_rows();
  result.folds = BlendFolds(options, result.rows);
  if (result.folds == 0)
    throw std::invalid_argument("the blend is chosen by folds only with --ranker-blend auto and fewer rows than a "
                                "held-out share needs");
  const std::vector<std::vector<uint64_t>> folds = SplitFolds(result.rows, result.folds, seed);
  // Each fixed blend keeps the ranker whole: its linear scores are all the choice needs.
  RankerOptions fitted = options;
  fitted.blend = 1;

  const uint32_t shortlist = uint32_t(std::min<uint64_t>(options.shortlist, train.num_labels()));
  std::vector<uint64_t> scored_rows;  // the rows in the order they were scored: fold after fold
  std::vector<uint32_t> labels;       // their MLP shortlists, rows x shortlist
  std::vector<float> probabilities, linear_scores;
  for (uint32_t k = 0; k < result.folds; ++k) {
    if (stopped && stopped()) {
      result.stopped = true;
      return result;
    }
    std::vector<uint64_t> others;
    for (uint32_t j = 0; j < result.folds; ++j)
      if (j != k) others.insert(others.end(), folds[j].begin(), folds[j].end());
    std::sort(others.begin(), others.end());
    const data::Dataset fitting = data::SelectRows(train, others);
    std::optional<kernels::Model<float>> mlp = train_mlp(fitting);
    if (!mlp || (stopped && stopped())) {
      result.stopped = true;
      return result;
    }
    if (!scoring) continue;
    const RankerStageResult stage = TrainShortlistRanker(*mlp, fitting, nullptr, fitted, stopped);
    if (stage.stopped) {
      result.stopped = true;
      return result;
    }
    const data::Dataset fold = data::SelectRows(train, folds[k]);
    const engine::Prediction top = engine::Predict(*mlp, fold, shortlist);
    std::vector<float> scores(top.labels.size());
    tbb::enumerable_thread_specific<kernels::RankerScratch> scratches;
    tbb::parallel_for(uint64_t(0), fold.num_rows(), [&](uint64_t r) {
      kernels::RankerScores(stage.ranker->linear, fold.features, r, top.labels.data() + r * shortlist, shortlist,
                            scores.data() + r * shortlist, &scratches.local());
    });
    scored_rows.insert(scored_rows.end(), folds[k].begin(), folds[k].end());
    labels.insert(labels.end(), top.labels.begin(), top.labels.end());
    probabilities.insert(probabilities.end(), top.scores.begin(), top.scores.end());
    linear_scores.insert(linear_scores.end(), scores.begin(), scores.end());
  }
  if (scoring) {
    const data::Dataset scored = data::SelectRows(train, scored_rows);
    result.choice = ChooseBlend(scored.labels, labels.data(), probabilities.data(), linear_scores.data(), shortlist);
  }
  result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return result;
}

}  // namespace xmlt::run
