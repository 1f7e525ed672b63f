// The stage after training that fits the shortlist ranker (kernels/ranker/shortlist_ranker.h) once
// the merged model is final, whatever the algorithm and devices: the MLP's top `shortlist` labels
// for every training row, scored by the run's devices (run/device_shortlists.h); the linear
// ranker's squared hinge solved per label over each row's labels and that shortlist on the host
// (kernels/ranker/linear_ranker_dual.h); and the blend chosen on held-out training rows that
// neither model trained on (docs/experiments/peers.md).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "data/dataset.h"
#include "kernels/model.h"
#include "kernels/ranker/linear_ranker_dual.h"
#include "kernels/ranker/shortlist_ranker.h"
#include "run/blend_choice.h"
#include "run/device_shortlists.h"

namespace xmlt::run {

struct RankerOptions {
  bool enabled = true;     // --ranker auto (the default) or off
  float blend = -1;        // --ranker-blend: a fixed a in [0, 1] of the geometric form, or below 0 (auto): chosen
  double holdout = 0.1;    // --ranker-holdout: the share of the training rows held out for the choice
  uint32_t shortlist = 50;  // --ranker-shortlist
  uint32_t passes = 10;     // --ranker-passes: the solver's most passes over each label's rows
  bool choose_blend() const { return blend < 0; }
};

// At most this many held-out rows: 5,000 rows put one standard error of a P@1 near 0.9 at 0.4
// points, which is all the choice of a needs; a larger set's MLP keeps its rows.
inline constexpr uint64_t kMaxHoldoutRows = 5000;
// Fewer held-out rows than this cannot choose a blend: --ranker auto then trains no ranker.
inline constexpr uint64_t kMinHoldoutRows = 100;
// The ranker's (feature, label) pairs are held to this many: its solver names a pair in 32 bits, one
// value of which means none (kernels/ranker/linear_ranker_dual.cc). At 8 bytes a pair that is
// 32 GiB, so on most machines the memory plan decides first (run/ranker_plan.h): Delicious-200K's
// 1.15 G pairs fit a machine of 24 GiB (docs/benchmarks/ranker.md).
inline constexpr uint64_t kMaxRankerPairs = uint64_t{UINT32_MAX} - 1;

// How many of `rows` training rows to hold out (0: too few rows for a choice, or a fixed blend).
uint64_t HoldoutRows(const RankerOptions& options, uint64_t rows);

// The rows held out of `rows`, drawn with `seed`, ascending, and the rest: the same split on every
// rank and at every resume of the run.
struct HoldoutSplit {
  std::vector<uint64_t> held_out, kept;
};
HoldoutSplit SplitHoldout(uint64_t rows, uint64_t held_out, uint64_t seed);

// An upper bound on the pairs a ranker of `train` would hold, from counts alone (one pass over
// the rows, no index): per label, the features of its rows, at most every feature; per feature,
// the labels of its rows, at most every label; the smaller of the two sums. What the memory plan
// counts before training (scheduler::PlanRankerMemory).
uint64_t RankerPairBound(const data::Dataset& train);

// The pairs a ranker of `train` would hold: RankerPairBound when that is already within `limit`,
// else counted exactly without allocating them.
uint64_t CountRankerPairs(const data::Dataset& train, uint64_t limit);

struct RankerStageReport {
  uint64_t pairs = 0, dense_features = 0, holdout_rows = 0;
  uint32_t folds = 0;                // > 0: the blend was chosen by this many folds of the training rows
  kernels::RankerDualReport solver;  // the instances and passes of the linear model's solver
  BlendChoice choice;                // what each blend gave on the held-out rows (empty for a fixed blend)
  // Labels never solved: the held-out rows, scored once the labels they read were solved, chose
  // the MLP alone (blend 0), which ended the stage there.
  uint64_t labels_skipped = 0;
  // GPUs that failed scoring their shares of the shortlists, each "id: error"; the host scored
  // those shares instead (run/device_shortlists.h).
  std::vector<std::string> device_faults;
  double shortlist_seconds = 0, build_seconds = 0, train_seconds = 0, choice_seconds = 0;
  double seconds() const { return shortlist_seconds + build_seconds + train_seconds + choice_seconds; }
};

struct RankerStageResult {
  std::shared_ptr<const kernels::ShortlistRanker> ranker;  // null when the blend is 0: the MLP alone
  RankerStageReport report;
  bool stopped = false;  // the stage's `stopped` ended it: no ranker
};

// Trains the ranker for `mlp` on `train` (the rows the MLP trained on) and sets its blend: the
// options' fixed weight in the geometric form, or the best form and weight on `holdout`'s rows
// (run/blend_choice.h). To choose, it solves first only the labels of the held-out rows'
// shortlists, which are all their blend reads, so the choice is the one a whole solve would make;
// a blend of 0 then ends the stage (report.labels_skipped), else the other labels are solved and
// the model is that of one solve, bit for bit. Runs on the threads
// TBB allows. Throws std::length_error, before allocating them, for more than kMaxRankerPairs pairs.
// `stopped` (a stop signal's check), when given, is asked between the shortlists' chunks of rows,
// the solver's labels and passes, and the steps: once true, the stage ends within one of them,
// with `stopped` set and no ranker. `chosen`, when given, is a choice already made on other rows
// (by folds, run/fold_blend_choice.h): the ranker takes its form and weight, and with a weight of
// 0 nothing is solved. The training rows' shortlists are scored on `where` (run/device_shortlists.h):
// the run's devices, or the host in fp32 when none are named.
RankerStageResult TrainShortlistRanker(const kernels::Model<float>& mlp, const data::Dataset& train,
                                       const data::Dataset* holdout, const RankerOptions& options,
                                       const std::function<bool()>& stopped = {},
                                       const BlendChoice* chosen = nullptr, const ShortlistDevices& where = {});

}  // namespace xmlt::run
