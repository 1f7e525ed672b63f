// What training hands to eval, predict and the model file: the MLP and, when the run trained one,
// the linear ranker that re-scores its shortlist (kernels/ranker/shortlist_ranker.h).
#pragma once

#include <memory>

#include "kernels/model.h"
#include "kernels/ranker/shortlist_ranker.h"

namespace xmlt::engine {

struct TrainedModel {
  kernels::Model<float> mlp;
  std::shared_ptr<const kernels::ShortlistRanker> ranker;  // null: the MLP's order alone
};

}  // namespace xmlt::engine
