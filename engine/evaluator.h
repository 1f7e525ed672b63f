// Test-set evaluation and prediction with a model on the CPU: forward passes over chunks of rows,
// top-k per row, P@k / nDCG@k and the loss.
#pragma once

#include <cstdint>
#include <vector>

#include "data/dataset.h"
#include "kernels/model.h"
#include "kernels/ranking_metrics.h"

namespace xmlt::engine {

struct Evaluation {
  kernels::RankingMetrics metrics;
  double loss = 0;  // mean cross-entropy over rows with labels
  uint64_t rows = 0;
};

// Feature ids beyond the model's input size are ignored (a test file may mention features the
// training file never had); label ids beyond its output size can never be predicted.
Evaluation Evaluate(const kernels::Model<float>& model, const data::Dataset& dataset);

struct Prediction {
  uint32_t k = 0;
  std::vector<uint32_t> labels;  // rows x k, best first
  std::vector<float> scores;     // rows x k softmax probabilities
};

Prediction Predict(const kernels::Model<float>& model, const data::Dataset& dataset, uint32_t k);

}  // namespace xmlt::engine
