// Evaluation and prediction; see evaluator.h.
#include "engine/evaluator.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "data/sparse_batch.h"
#include "kernels/cpu/softmax_loss.h"
#include "kernels/cpu/sparse_mlp.h"
#include "kernels/cpu/top_k.h"

namespace xmlt::engine {
namespace {

// Rows per forward pass: bounded so that the logits stay within about 256 MiB.
uint32_t ChunkRows(uint64_t num_labels) {
  const uint64_t budget = (uint64_t{256} << 20) / sizeof(float);
  return uint32_t(std::clamp<uint64_t>(budget / std::max<uint64_t>(num_labels, 1), 1, 1024));
}

// Drops ids the model has no room for, so a test file with unseen ids can still be scored.
void ClipToModel(const kernels::ModelShape& shape, data::SparseBatch* batch) {
  data::SparseBatch clipped;
  for (uint32_t r = 0; r < batch->num_rows; ++r) {
    for (uint64_t e = batch->feature_ptr[r]; e < batch->feature_ptr[r + 1]; ++e) {
      if (batch->feature_idx[e] < shape.num_features) {
        clipped.feature_idx.push_back(batch->feature_idx[e]);
        clipped.feature_val.push_back(batch->feature_val[e]);
      }
    }
    clipped.feature_ptr.push_back(clipped.feature_idx.size());
    for (uint64_t e = batch->label_ptr[r]; e < batch->label_ptr[r + 1]; ++e)
      if (batch->label_idx[e] < shape.num_labels) clipped.label_idx.push_back(batch->label_idx[e]);
    clipped.label_ptr.push_back(clipped.label_idx.size());
  }
  clipped.num_rows = batch->num_rows;
  *batch = std::move(clipped);
}

bool FitsModel(const kernels::ModelShape& shape, const data::Dataset& dataset) {
  return dataset.num_features() <= shape.num_features && dataset.num_labels() <= shape.num_labels;
}

// Runs `visit(batch, workspace, first_row)` for each chunk after the forward pass.
template <class Visit>
void ForEachChunk(const kernels::Model<float>& model, const data::Dataset& dataset, Visit visit) {
  const uint32_t chunk = ChunkRows(model.shape.num_labels);
  kernels::cpu::MlpWorkspace<float> workspace(model.shape, chunk);
  data::SparseBatch batch;
  std::vector<uint64_t> rows(chunk);
  const bool clip = !FitsModel(model.shape, dataset);
  for (uint64_t first = 0; first < dataset.num_rows(); first += chunk) {
    const size_t count = size_t(std::min<uint64_t>(chunk, dataset.num_rows() - first));
    std::iota(rows.begin(), rows.begin() + count, first);
    data::GatherBatch(dataset, rows.data(), count, &batch);
    if (clip) ClipToModel(model.shape, &batch);
    kernels::cpu::Forward(model, batch, &workspace);
    visit(batch, workspace, first);
  }
}

}  // namespace

Evaluation Evaluate(const kernels::Model<float>& model, const data::Dataset& dataset) {
  constexpr uint32_t k = kernels::RankingAccumulator::kDepth;
  kernels::RankingAccumulator accumulator;
  double loss_sum = 0;
  uint64_t labeled = 0;
  std::vector<uint32_t> top;
  ForEachChunk(model, dataset, [&](const data::SparseBatch& batch,
                                   const kernels::cpu::MlpWorkspace<float>& ws, uint64_t first) {
    const kernels::cpu::LossResult loss =
        kernels::cpu::SoftmaxCrossEntropy(ws.logits.data(), batch, model.shape.num_labels);
    loss_sum += loss.loss_sum;
    labeled += loss.labeled_rows;
    top.resize(uint64_t(batch.num_rows) * k);
    kernels::cpu::TopK<float>(ws.logits.data(), batch.num_rows, model.shape.num_labels, k,
                              top.data(), nullptr);
    // Ranked against the row's labels as the file has them: a label the model cannot predict
    // still counts in the ideal DCG (the batch may have been clipped for the loss).
    const data::CsrMatrix& labels = dataset.labels;
    for (uint32_t r = 0; r < batch.num_rows; ++r)
      accumulator.AddRow(top.data() + uint64_t(r) * k, labels.col_idx.data() + labels.RowBegin(first + r),
                         uint32_t(labels.RowSize(first + r)));
  });
  Evaluation result;
  result.metrics = accumulator.Mean();
  result.loss = labeled > 0 ? loss_sum / double(labeled) : 0.0;
  result.rows = dataset.num_rows();
  return result;
}

Prediction Predict(const kernels::Model<float>& model, const data::Dataset& dataset, uint32_t k) {
  Prediction prediction;
  prediction.k = k;
  prediction.labels.resize(dataset.num_rows() * k);
  prediction.scores.resize(dataset.num_rows() * k);
  const uint64_t num_labels = model.shape.num_labels;
  ForEachChunk(model, dataset, [&](const data::SparseBatch& batch,
                                   const kernels::cpu::MlpWorkspace<float>& ws, uint64_t first) {
    uint32_t* labels = prediction.labels.data() + first * k;
    float* scores = prediction.scores.data() + first * k;
    kernels::cpu::TopK<float>(ws.logits.data(), batch.num_rows, num_labels, k, labels, scores);
    // Turn the top logits into probabilities: p = exp(z - max - log sum exp(z - max)).
    for (uint32_t r = 0; r < batch.num_rows; ++r) {
      const float* z = ws.logits.data() + uint64_t(r) * num_labels;
      const float max = *std::max_element(z, z + num_labels);
      double sum = 0;
      for (uint64_t j = 0; j < num_labels; ++j) sum += std::exp(double(z[j] - max));
      const double shift = double(max) + std::log(sum);
      for (uint32_t i = 0; i < k; ++i) {
        float& s = scores[uint64_t(r) * k + i];
        s = std::isinf(s) ? 0.0f : float(std::exp(double(s) - shift));
      }
    }
  });
  return prediction;
}

}  // namespace xmlt::engine
