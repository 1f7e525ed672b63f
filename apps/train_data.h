// The data of one `xmltrain train` run: the training rows, the model's shape they decide, and the
// test rows as that model's input; loaded from files, or taken from the caller's memory.
#pragma once

#include <memory>

#include "apps/train_flags.h"
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
  kernels::ModelShape shape;            // SettleShape's, from the training rows alone
  // The ranker's (feature, label) pairs as planned before the held-out rows were taken out: a
  // bound, or their count where the bound did not fit (apps/train_ranker.h); 0 without a ranker.
  uint64_t ranker_pairs = 0;
  double load_seconds = 0;
  float largest_raw_value = 0;  // --normalize none: the training rows' largest |value| (else 0)
};

// Loads --train and --test (or takes the session's data), rank 0 of `ranks` saying the readers'
// warnings; settles the model's shape from the training rows and makes the test rows its input.
// Throws data::InputError for a test set without a label. The ranker's rows are still in `train`
// (HoldOutRankerRows takes them out).
TrainingData LoadTrainingData(TrainFlags& f, const TrainSession& session, ranks::RankGroup* ranks);

}  // namespace xmlt::apps
