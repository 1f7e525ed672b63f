// The data of one `xmltrain train` run: the training rows, then the test rows as the input of the
// model whose shape the training rows decide (the plan's, train_settings.h's PlanShape); loaded
// from files, or taken from the caller's memory. Loading only loads: it decides nothing.
#pragma once

#include <memory>

#include "apps/train_flags.h"
#include "apps/train_plan.h"
#include "apps/train_session.h"
#include "data/dataset.h"
#include "kernels/model.h"
#include "ranks/rank_group.h"

namespace xmlt::apps {

struct TrainingData {
  data::Dataset train;                  // L2-normalized rows under --normalize l2
  std::unique_ptr<data::Dataset> test;  // null without --test; with its inverse propensities
  // The training rows held out to choose the ranker's blend (apps/train_ranker.h), kept out of
  // `train`; null when none are.
  std::unique_ptr<data::Dataset> holdout;
  // The ranker's (feature, label) pairs as planned before the held-out rows were taken out: a
  // bound, or their count where the bound did not fit (apps/train_ranker.h); 0 without a ranker.
  uint64_t ranker_pairs = 0;
  double load_seconds = 0;
  float largest_raw_value = 0;  // --normalize none: the training rows' largest |value| (else 0)
};

// Loads --train (or takes the session's rows) as read, rank 0 of `ranks` saying the readers'
// warnings; refuses a bad --normalize first.
TrainingData LoadTrainingRows(const TrainFlags& f, const TrainSession& session, ranks::RankGroup* ranks);

// Then, with the plan's model shape: loads --test (or takes the session's) as that model's input,
// L2-normalizes the training rows under --normalize l2, and gives the test rows their inverse
// propensities (the plan's --propensity) from every training row. Throws data::InputError for a
// test set without a label. The ranker's rows are still in `train` (HoldOutRankerRows takes them
// out).
void LoadTestRows(const TrainFlags& f, const TrainSession& session, ranks::RankGroup* ranks, const TrainPlan& plan,
                  TrainingData* loaded);

}  // namespace xmlt::apps
