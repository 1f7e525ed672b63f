// Evaluation and prediction; see evaluator.h.
#include "engine/evaluator.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>

#include "data/sparse_batch.h"
#include "kernels/cpu/softmax_loss.h"
#include "kernels/cpu/sparse_mlp.h"
#include "kernels/cpu/output_top_k.h"
#include "kernels/cpu/top_k.h"

namespace xmlt::engine {

uint32_t LogitChunkRows(uint64_t num_labels) {
  const uint64_t budget = (uint64_t{256} << 20) / sizeof(float);
  return uint32_t(std::clamp<uint64_t>(budget / std::max<uint64_t>(num_labels, 1), 1, 1024));
}
namespace {

// The propensity-scored metrics' label weights, or null when the dataset carries none.
const float* InversePropensity(const data::Dataset& dataset) {
  return dataset.inverse_propensity.empty() ? nullptr : dataset.inverse_propensity.data();
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

// Runs `visit(batch, workspace, first)` for each chunk of the given rows after the forward pass;
// `first` is the chunk's position in `rows`.
template <class Visit>
void ForEachChunk(const kernels::Model<float>& model, const data::Dataset& dataset,
                  const uint64_t* rows, size_t count, Visit visit) {
  const uint32_t chunk = LogitChunkRows(model.shape.num_labels);
  kernels::cpu::MlpWorkspace<float> workspace(model.shape, chunk);
  data::SparseBatch batch;
  const bool clip = !FitsModel(model.shape, dataset);
  for (size_t first = 0; first < count; first += chunk) {
    const size_t size = std::min<size_t>(chunk, count - first);
    data::GatherBatch(dataset, rows + first, size, &batch);
    if (clip) ClipToModel(model.shape, &batch);
    kernels::cpu::Forward(model, batch, &workspace);
    visit(batch, workspace, first);
  }
}

std::vector<uint64_t> AllRows(const data::Dataset& dataset) {
  std::vector<uint64_t> rows(dataset.num_rows());
  std::iota(rows.begin(), rows.end(), uint64_t{0});
  return rows;
}

}  // namespace

void EvaluationSums::Add(const EvaluationSums& other) {
  ranking.Merge(other.ranking);
  loss_sum += other.loss_sum;
  labeled_rows += other.labeled_rows;
}

Evaluation EvaluationSums::Mean() const {
  Evaluation result;
  result.metrics = ranking.Mean();
  result.loss = labeled_rows > 0 ? loss_sum / double(labeled_rows) : 0.0;
  result.rows = ranking.rows();
  return result;
}

EvaluationSums EvaluateRows(const kernels::Model<float>& model, const data::Dataset& dataset,
                            const uint64_t* rows, size_t count) {
  constexpr uint32_t k = kernels::TopKAccumulator::kDepth;
  EvaluationSums sums;
  std::vector<uint32_t> top;
  ForEachChunk(model, dataset, rows, count, [&](const data::SparseBatch& batch,
                                                const kernels::cpu::MlpWorkspace<float>& ws, size_t first) {
    const kernels::cpu::LossResult loss =
        kernels::cpu::SoftmaxCrossEntropy(ws.logits.data(), batch, model.shape.num_labels);
    sums.loss_sum += loss.loss_sum;
    sums.labeled_rows += loss.labeled_rows;
    top.resize(uint64_t(batch.num_rows) * k);
    kernels::cpu::TopK<float>(ws.logits.data(), batch.num_rows, model.shape.num_labels, k,
                              top.data(), nullptr);
    // Ranked against the row's labels as the file has them: a label the model cannot predict
    // still counts in the ideal DCG (the batch may have been clipped for the loss).
    const data::CsrMatrix& labels = dataset.labels;
    for (uint32_t r = 0; r < batch.num_rows; ++r) {
      const uint64_t row = rows[first + r];
      sums.ranking.AddRow(top.data() + uint64_t(r) * k, labels.col_idx.data() + labels.RowBegin(row),
                          uint32_t(labels.RowSize(row)), InversePropensity(dataset),
                          dataset.inverse_propensity.size());
    }
  });
  return sums;
}

EvaluationSums EvaluateRowsInChunks(const kernels::Model<float>& model, const data::Dataset& dataset,
                                    const uint64_t* rows, size_t count, uint32_t max_rows,
                                    uint64_t max_feature_nnz, uint64_t max_label_nnz, const ScoreBatch& score) {
  constexpr uint32_t k = kernels::TopKAccumulator::kDepth;
  EvaluationSums sums;
  const bool clip = !FitsModel(model.shape, dataset);
  const data::CsrMatrix& labels = dataset.labels;
  data::SparseBatch batch;
  std::vector<uint32_t> top;
  std::vector<uint64_t> chunk;
  // Scores the rows in `chunk` on the device and ranks them against the file's labels.
  auto flush = [&] {
    if (chunk.empty()) return;
    data::GatherBatch(dataset, chunk.data(), chunk.size(), &batch);
    if (clip) ClipToModel(model.shape, &batch);
    top.assign(chunk.size() * k, 0);
    double loss_sum = 0;
    uint32_t labeled = 0;
    score(batch, k, top.data(), &loss_sum, &labeled);
    sums.loss_sum += loss_sum;
    sums.labeled_rows += labeled;
    for (size_t r = 0; r < chunk.size(); ++r)
      sums.ranking.AddRow(top.data() + r * k, labels.col_idx.data() + labels.RowBegin(chunk[r]),
                          uint32_t(labels.RowSize(chunk[r])), InversePropensity(dataset),
                          dataset.inverse_propensity.size());
    chunk.clear();
  };
  uint64_t feature_nnz = 0, label_nnz = 0;  // of the rows in `chunk`, before clipping (a bound)
  for (size_t i = 0; i < count; ++i) {
    const uint64_t row = rows[i];
    const uint64_t f = dataset.features.RowSize(row), l = labels.RowSize(row);
    if (f > max_feature_nnz || l > max_label_nnz || max_rows == 0) {
      sums.Add(EvaluateRows(model, dataset, &row, 1));  // too large for the device alone
      continue;
    }
    if (chunk.size() == max_rows || feature_nnz + f > max_feature_nnz || label_nnz + l > max_label_nnz) {
      flush();
      feature_nnz = label_nnz = 0;
    }
    chunk.push_back(row);
    feature_nnz += f;
    label_nnz += l;
  }
  flush();
  return sums;
}

Evaluation Evaluate(const kernels::Model<float>& model, const data::Dataset& dataset) {
  const std::vector<uint64_t> rows = AllRows(dataset);
  return EvaluateRows(model, dataset, rows.data(), rows.size()).Mean();
}

uint64_t EvaluationWorkspaceBytes(const kernels::ModelShape& shape) {
  const uint64_t rows = LogitChunkRows(shape.num_labels);
  uint64_t per_row = shape.num_labels + 3;  // logits, the top-k and the batch's row pointers
  for (uint32_t h : shape.hidden) per_row += 3 * uint64_t(h);  // activations and the two deltas
  return rows * per_row * sizeof(float) +
         kernels::cpu::OutputLayerWorkspaceBytes(shape.num_labels, shape.hidden.back(), uint32_t(rows), sizeof(float));
}

std::vector<uint64_t> SampleEvalRows(uint64_t num_rows, uint64_t count, uint64_t seed) {
  std::vector<uint64_t> rows(num_rows);
  std::iota(rows.begin(), rows.end(), uint64_t{0});
  if (count == 0 || count >= num_rows) return rows;
  // A partial Fisher-Yates shuffle: the first `count` places are a uniform sample. Sorted after,
  // so the gathers walk the file forward.
  std::mt19937_64 rng(seed);
  for (uint64_t i = 0; i < count; ++i) {
    const uint64_t j = i + rng() % (num_rows - i);
    std::swap(rows[i], rows[j]);
  }
  rows.resize(count);
  std::sort(rows.begin(), rows.end());
  return rows;
}

namespace {

// The top k logits of each of the chunk's rows as labels and softmax probabilities:
// p = exp(z - max - log sum exp(z - max)).
void TopProbabilities(const float* logits, uint32_t rows, uint64_t num_labels, uint32_t k, uint32_t* labels,
                      float* scores) {
  kernels::cpu::TopK<float>(logits, rows, num_labels, k, labels, scores);
  for (uint32_t r = 0; r < rows; ++r) {
    const float* z = logits + uint64_t(r) * num_labels;
    const float max = *std::max_element(z, z + num_labels);
    double sum = 0;
    for (uint64_t j = 0; j < num_labels; ++j) sum += std::exp(double(z[j] - max));
    const double shift = double(max) + std::log(sum);
    for (uint32_t i = 0; i < k; ++i) {
      float& s = scores[uint64_t(r) * k + i];
      s = std::isinf(s) ? 0.0f : float(std::exp(double(s) - shift));
    }
  }
}

// Calls visit(batch, workspace, first, labels, scores) per chunk, labels and scores the rows'
// lists of `depth` (rows x depth): the MLP's top with their probabilities, re-ranked by the ranker
// when the model has one.
template <class Visit>
void ForEachRankedChunk(const kernels::Model<float>& mlp, const kernels::ShortlistRanker* ranker,
                        const data::Dataset& dataset, const uint64_t* rows, size_t count, uint32_t depth, Visit visit) {
  const uint64_t num_labels = mlp.shape.num_labels;
  std::vector<uint32_t> labels, reranked_labels;
  std::vector<float> scores, reranked_scores;
  kernels::RankerScratch scratch;
  ForEachChunk(mlp, dataset, rows, count, [&](const data::SparseBatch& batch,
                                             const kernels::cpu::MlpWorkspace<float>& ws, size_t first) {
    labels.resize(uint64_t(batch.num_rows) * depth);
    scores.resize(labels.size());
    TopProbabilities(ws.logits.data(), batch.num_rows, num_labels, depth, labels.data(), scores.data());
    if (ranker != nullptr) {
      reranked_labels.resize(labels.size());
      reranked_scores.resize(labels.size());
      for (uint32_t r = 0; r < batch.num_rows; ++r) {
        const uint64_t at = uint64_t(r) * depth;
        kernels::RerankShortlist(*ranker, dataset.features, rows[first + r], labels.data() + at,
                                 scores.data() + at, depth, reranked_labels.data() + at, reranked_scores.data() + at,
                                 &scratch);
      }
      labels.swap(reranked_labels);
      scores.swap(reranked_scores);
    }
    visit(batch, ws, first, labels, scores);
  });
}

// How deep a ranked list must be for the first k to be final: the ranker re-orders its whole
// shortlist.
uint32_t RankedDepth(const kernels::Model<float>& mlp, const kernels::ShortlistRanker* ranker, uint32_t k) {
  const uint64_t depth = ranker != nullptr ? std::max(k, ranker->shortlist) : k;
  return uint32_t(std::min<uint64_t>(depth, mlp.shape.num_labels));
}

Prediction PredictRanked(const kernels::Model<float>& mlp, const kernels::ShortlistRanker* ranker,
                         const data::Dataset& dataset, uint32_t k, const std::function<bool()>& stopped = {}) {
  Prediction prediction;
  prediction.k = k;
  prediction.labels.resize(dataset.num_rows() * k);
  prediction.scores.resize(dataset.num_rows() * k);
  const uint32_t depth = std::max(k, RankedDepth(mlp, ranker, k));
  const std::vector<uint64_t> rows = AllRows(dataset);
  // Chunk by chunk when a stop may come, so that it is seen within one chunk's forward pass.
  const size_t chunk = stopped ? LogitChunkRows(mlp.shape.num_labels) : rows.size();
  for (size_t begin = 0; begin < rows.size(); begin += chunk) {
    if (stopped && stopped()) break;
    const size_t count = std::min(chunk, rows.size() - begin);
    ForEachRankedChunk(mlp, ranker, dataset, rows.data() + begin, count, depth,
                       [&](const data::SparseBatch& batch, const kernels::cpu::MlpWorkspace<float>&, size_t first,
                           const std::vector<uint32_t>& labels, const std::vector<float>& scores) {
                         for (uint32_t r = 0; r < batch.num_rows; ++r)
                           for (uint32_t i = 0; i < k; ++i) {
                             prediction.labels[(begin + first + r) * k + i] = labels[uint64_t(r) * depth + i];
                             prediction.scores[(begin + first + r) * k + i] = scores[uint64_t(r) * depth + i];
                           }
                       });
  }
  return prediction;
}

}  // namespace

Prediction Predict(const kernels::Model<float>& model, const data::Dataset& dataset, uint32_t k,
                   const std::function<bool()>& stopped) {
  return PredictRanked(model, nullptr, dataset, k, stopped);
}

Prediction Predict(const TrainedModel& model, const data::Dataset& dataset, uint32_t k) {
  return PredictRanked(model.mlp, model.ranker.get(), dataset, k);
}

Evaluation Evaluate(const TrainedModel& model, const data::Dataset& dataset) {
  if (!model.ranker) return Evaluate(model.mlp, dataset);
  constexpr uint32_t k = kernels::TopKAccumulator::kDepth;
  const uint32_t depth = RankedDepth(model.mlp, model.ranker.get(), k);
  const std::vector<uint64_t> rows = AllRows(dataset);
  EvaluationSums sums;
  std::vector<uint32_t> top(k);
  const data::CsrMatrix& truth = dataset.labels;
  ForEachRankedChunk(model.mlp, model.ranker.get(), dataset, rows.data(), rows.size(), depth,
                     [&](const data::SparseBatch& batch, const kernels::cpu::MlpWorkspace<float>& ws, size_t first,
                         const std::vector<uint32_t>& labels, const std::vector<float>&) {
                       const kernels::cpu::LossResult loss =
                           kernels::cpu::SoftmaxCrossEntropy(ws.logits.data(), batch, model.mlp.shape.num_labels);
                       sums.loss_sum += loss.loss_sum;
                       sums.labeled_rows += loss.labeled_rows;
                       for (uint32_t r = 0; r < batch.num_rows; ++r) {
                         const uint64_t row = rows[first + r];
                         // A model of fewer than k labels leaves places no label fills.
                         for (uint32_t i = 0; i < k; ++i) top[i] = i < depth ? labels[uint64_t(r) * depth + i] : UINT32_MAX;
                         sums.ranking.AddRow(top.data(), truth.col_idx.data() + truth.RowBegin(row),
                                             uint32_t(truth.RowSize(row)), InversePropensity(dataset),
                                             dataset.inverse_propensity.size());
                       }
                     });
  return sums.Mean();
}

namespace {

// The shortlists' chunks of rows: one product per block of labels serves them all (fewer chunks
// convert and read the weights fewer times: 1,024 rows scored 1.24x faster than 256 at
// Amazon-670K's shape in bf16), and a stop is seen within one chunk.
constexpr uint32_t kTopLabelsChunkRows = 1024;

}  // namespace

uint64_t TopLabelsWorkspaceBytes(const kernels::ModelShape& shape, uint32_t k, uint64_t threads) {
  uint64_t activations = 0;
  for (uint32_t h : shape.hidden) activations += uint64_t(kTopLabelsChunkRows) * h * sizeof(float);
  return activations + kernels::cpu::OutputTopKWorkspaceBytes(shape, kTopLabelsChunkRows, k,
                                                              kernels::OutputMath::kBf16, threads);
}

void TopLabelsOfRows(const kernels::Model<float>& model, const data::Dataset& dataset, const uint64_t* rows,
                     size_t count, uint32_t k, kernels::OutputMath math, uint32_t* top,
                     const std::function<bool()>& stopped) {
  if (k == 0 || count == 0) return;
  const uint32_t chunk = uint32_t(std::min<size_t>(kTopLabelsChunkRows, count));
  kernels::cpu::OutputTopKWorkspace workspace(model.shape, chunk, k, math);
  std::vector<std::vector<float>> activations;
  data::SparseBatch batch;
  const bool clip = !FitsModel(model.shape, dataset);
  for (size_t first = 0; first < count; first += chunk) {
    if (stopped && stopped()) return;
    const size_t size = std::min<size_t>(chunk, count - first);
    data::GatherBatch(dataset, rows + first, size, &batch);
    if (clip) ClipToModel(model.shape, &batch);
    kernels::cpu::HiddenActivations(model, batch, &activations);
    kernels::cpu::OutputTopK(model, activations.back().data(), batch.num_rows, top + first * k, nullptr, &workspace);
  }
}

std::vector<uint32_t> TopLabels(const kernels::Model<float>& model, const data::Dataset& dataset, uint32_t k,
                                const std::function<bool()>& stopped, kernels::OutputMath math) {
  std::vector<uint32_t> top(dataset.num_rows() * k);
  const std::vector<uint64_t> rows = AllRows(dataset);
  TopLabelsOfRows(model, dataset, rows.data(), rows.size(), k, math, top.data(), stopped);
  return top;
}

}  // namespace xmlt::engine
