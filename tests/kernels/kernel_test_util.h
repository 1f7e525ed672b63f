// Random models and batches for the kernel tests.
#pragma once

#include <algorithm>
#include <random>
#include <vector>

#include "data/sparse_batch.h"
#include "kernels/model.h"

namespace xmlt::testing {

// Appends one row of the given (sorted, distinct) feature ids, each with a random value in
// [0.2, 1.2), and closes the row's feature offsets.
inline void AppendFeatureRow(const std::vector<uint32_t>& ids, std::mt19937_64& rng, data::SparseBatch* batch) {
  for (uint32_t id : ids) {
    batch->feature_idx.push_back(id);
    batch->feature_val.push_back(0.2f + float(rng() % 1000) / 1000.0f);
  }
  batch->feature_ptr.push_back(batch->feature_idx.size());
}

// Appends one row of `count` distinct random labels below `labels`, sorted.
inline void AppendLabelRow(uint32_t count, uint32_t labels, std::mt19937_64& rng, data::SparseBatch* batch) {
  std::vector<uint32_t> ys;
  while (ys.size() < count) {
    const uint32_t y = uint32_t(rng() % labels);
    if (std::find(ys.begin(), ys.end(), y) == ys.end()) ys.push_back(y);
  }
  std::sort(ys.begin(), ys.end());
  batch->label_idx.insert(batch->label_idx.end(), ys.begin(), ys.end());
  batch->label_ptr.push_back(batch->label_idx.size());
}

// A batch of `rows` rows over `features` features and `labels` labels with random ids and values;
// row 1 has no features and row 2 has no labels when there are enough rows.
inline data::SparseBatch RandomBatch(uint32_t rows, uint32_t features, uint32_t labels, uint64_t seed) {
  std::mt19937_64 rng(seed);
  data::SparseBatch batch;
  for (uint32_t r = 0; r < rows; ++r) {
    const uint32_t nnz = r == 1 ? 0 : 1 + uint32_t(rng() % std::min<uint32_t>(features, 5));
    std::vector<uint32_t> ids;
    while (ids.size() < nnz) {
      const uint32_t id = uint32_t(rng() % features);
      if (std::find(ids.begin(), ids.end(), id) == ids.end()) ids.push_back(id);
    }
    std::sort(ids.begin(), ids.end());
    AppendFeatureRow(ids, rng, &batch);
    AppendLabelRow(r == 2 ? 0 : 1 + uint32_t(rng() % std::min<uint32_t>(labels, 3)), labels, rng, &batch);
  }
  batch.num_rows = rows;
  return batch;
}

// A model with random biases too, so that no gradient is trivially zero.
template <class T>
kernels::Model<T> RandomModel(const kernels::ModelShape& shape, uint64_t seed) {
  kernels::Model<T> model = kernels::InitModel<T>(shape, seed);
  std::mt19937_64 rng(seed + 1);
  std::normal_distribution<double> normal(0.0, 0.3);
  for (size_t l = 0; l < model.layers.size(); ++l)
    for (uint64_t i = 0; i < model.layers[l].bias.size(); ++i) model.Bias(l)[i] = T(normal(rng));
  // Larger first-layer weights keep most ReLUs away from the kink at 0, where finite differences lie.
  for (uint64_t i = 0; i < model.layers[0].weight.size(); ++i) model.Weight(0)[i] = T(normal(rng));
  return model;
}

}  // namespace xmlt::testing
