// Rows and a model for the ranker's tests (ranker_stage_test.cc, fold_blend_choice_test.cc): rows a
// linear model separates and an untrained MLP does not.
#pragma once

#include <cstdint>
#include <random>
#include <vector>

#include "data/dataset.h"
#include "kernels/model.h"
#include "tests/make_dataset.h"

namespace xmlt::run {

// Rows whose one label is their first feature's id (mod `labels`), among noise features: a linear
// model separates them, an untrained MLP does not.
inline data::Dataset SeparableRows(uint32_t rows, uint32_t labels, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<testing::DatasetRow> out(rows);
  for (testing::DatasetRow& row : out) {
    const uint32_t label = uint32_t(rng() % labels);
    const uint32_t noise = labels + uint32_t(rng() % labels);
    row.features = {{label, 0.8f}, {noise, 0.6f}};
    row.labels = {label};
  }
  return testing::MakeDataset(out, 2 * labels, labels);
}

inline kernels::Model<float> UntrainedMlp(uint64_t features, uint64_t labels) {
  kernels::ModelShape shape;
  shape.num_features = features;
  shape.num_labels = labels;
  shape.hidden = {8};
  return kernels::InitModel<float>(shape, 3);
}

}  // namespace xmlt::run
