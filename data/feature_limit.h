// A dataset cut to a model's input size. A model has no weights for feature ids at or above its
// input size, so they cannot count; leaving them in the rows until the forward pass drops them
// would still count them where the rows are prepared, in their L2 norms, and change the scores of
// every row that has one. They are dropped first, and counted for the warning that says so.
#pragma once

#include <cstdint>

#include "data/dataset.h"

namespace xmlt::data {

struct FeatureLimit {
  Dataset dataset;             // features with ids below the limit only; num_features() the limit
  uint64_t dropped = 0;        // feature entries left out
  uint64_t rows_touched = 0;   // rows that had any
};

// `dataset` unchanged (sharing its arrays) when its features already fit `num_features`.
FeatureLimit LimitFeatures(const Dataset& dataset, uint64_t num_features);

}  // namespace xmlt::data
