// The ranker's blend chosen by folds, for a training set too small to hold a tenth out (fewer than
// kMinHoldoutRows held-out rows: under about 1,000 rows). One held-out tenth of 300 rows is 30
// rows, too few to choose among 21 blends, and the MLP would lose a tenth of its few rows. Here
// the rows are cut into kBlendFolds folds; for each, an MLP trained the way the run trains (the
// caller's) on the other folds, and a ranker fitted on them, score the fold's rows. The blend is
// chosen on every row, each scored by models that never saw it; the run's MLP and ranker then
// train on all the rows and take that blend. Without it, such a set got the MLP alone, below the
// linear libraries (measured: docs/experiments/peers.md, "Small training sets").
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <vector>

#include "data/dataset.h"
#include "kernels/model.h"
#include "run/blend_choice.h"
#include "run/ranker_stage.h"

namespace xmlt::run {

inline constexpr uint32_t kBlendFolds = 3;
// Fewer training rows than this choose no blend, by folds or otherwise: no ranker is fitted.
inline constexpr uint64_t kMinFoldRows = 30;

// kBlendFolds when --ranker-blend auto chooses by folds for `rows` training rows (too few to hold
// out, at least kMinFoldRows); 0 otherwise (a held-out share, a fixed blend, or no ranker).
uint32_t BlendFolds(const RankerOptions& options, uint64_t rows);

// The folds of `rows` rows, drawn with `seed`: `folds` disjoint sets, each ascending, of sizes
// that differ by at most one, together every row. The same on every rank and at every resume.
std::vector<std::vector<uint64_t>> SplitFolds(uint64_t rows, uint32_t folds, uint64_t seed);

// Trains an MLP on `rows` as the run will train its own; nullopt when a stop ended it.
using FoldMlpTrainer = std::function<std::optional<kernels::Model<float>>(const data::Dataset& rows)>;

struct FoldBlendChoice {
  BlendChoice choice;    // on every row, scored out of fold (empty when stopped, or not `scoring`)
  uint32_t folds = 0;
  uint64_t rows = 0;
  bool stopped = false;  // a stop ended it: no choice
  double seconds = 0;
};

// Chooses the blend for `train` by SplitFolds(train rows, BlendFolds(options, rows), seed). Every
// rank of a run calls it, since `train_mlp` trains across the ranks; only where `scoring` (rank 0)
// are the fold's ranker fitted and its rows scored. `stopped` is asked between the folds and
// within each ranker. Throws std::invalid_argument when the options do not choose by folds.
FoldBlendChoice ChooseBlendByFolds(const data::Dataset& train, const RankerOptions& options, uint64_t seed,
                                   const FoldMlpTrainer& train_mlp, bool scoring,
                                   const std::function<bool()>& stopped = {});

}  // namespace xmlt::run
