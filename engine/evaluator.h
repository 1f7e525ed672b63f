// Test-set evaluation and prediction with a model on the CPU: forward passes over chunks of rows,
// top-k per row, P@k / nDCG@k and the loss.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "data/dataset.h"
#include "data/sparse_batch.h"
#include "engine/trained_model.h"
#include "kernels/model.h"
#include "kernels/output_math.h"
#include "kernels/top_k_metrics.h"

namespace xmlt::engine {

struct Evaluation {
  kernels::TopKMetrics metrics;
  double loss = 0;  // mean cross-entropy over rows with labels
  uint64_t rows = 0;
};

// The sums behind an Evaluation, so that parts of a test set scored on different devices can be
// added up (in a fixed order, for a reproducible result) and turned into means once.
struct EvaluationSums {
  kernels::TopKAccumulator ranking;
  double loss_sum = 0;
  uint64_t labeled_rows = 0;
  void Add(const EvaluationSums& other);
  Evaluation Mean() const;
};

// Feature ids beyond the model's input size are ignored (a test file may mention features the
// training file never had); label ids beyond its output size can never be predicted.
Evaluation Evaluate(const kernels::Model<float>& model, const data::Dataset& dataset);
// With a ranker, the top labels are its re-ranked shortlists; the loss stays the MLP's.
Evaluation Evaluate(const TrainedModel& model, const data::Dataset& dataset);

// The sums over the given rows of `dataset` (row ids, any order).
EvaluationSums EvaluateRows(const kernels::Model<float>& model, const data::Dataset& dataset,
                            const uint64_t* rows, size_t count);

// The same sums, each chunk scored by a device of its own: `score(batch, k, top, &loss_sum,
// &labeled)` writes the batch's k best labels per row (best first, ties to the lower id), its
// summed loss and its labeled rows. Chunks hold at most `max_rows` rows, `max_feature_nnz` feature
// and `max_label_nnz` label entries, ids clipped to the model as above; a row beyond those bounds
// on its own is scored here on the CPU.
using ScoreBatch = std::function<void(const data::SparseBatch& batch, uint32_t k, uint32_t* top,
                                      double* loss_sum, uint32_t* labeled)>;
EvaluationSums EvaluateRowsInChunks(const kernels::Model<float>& model, const data::Dataset& dataset,
                                    const uint64_t* rows, size_t count, uint32_t max_rows,
                                    uint64_t max_feature_nnz, uint64_t max_label_nnz, const ScoreBatch& score);

// Rows a chunk of whole logits takes, bounded so that they stay within about 256 MiB (at most
// 1,024): the evaluator's chunks, and a GPU's when it scores the ranker's shortlists.
uint32_t LogitChunkRows(uint64_t num_labels);

// The bytes one evaluation holds besides the model (a chunk's activations, logits and scratch),
// for memory plans: each device of a run holds this while it scores its share.
uint64_t EvaluationWorkspaceBytes(const kernels::ModelShape& shape);

// A fixed sample of `count` of `num_rows` rows, drawn with `seed`, ascending: the same rows at
// every evaluation of a run. All rows when count is 0 or at least num_rows.
std::vector<uint64_t> SampleEvalRows(uint64_t num_rows, uint64_t count, uint64_t seed);

struct Prediction {
  uint32_t k = 0;
  std::vector<uint32_t> labels;  // rows x k, best first
  std::vector<float> scores;     // rows x k softmax probabilities
};

// `stopped`, when given, is asked before each chunk of rows: once true, the rest is left unscored
// (zeros) for the caller to drop.
Prediction Predict(const kernels::Model<float>& model, const data::Dataset& dataset, uint32_t k,
                   const std::function<bool()>& stopped = {});
// With a ranker: the MLP's top max(k, shortlist) re-ranked (kernels::RerankShortlist), the first
// k kept, their scores the blend: best first and never rising, whatever k.
Prediction Predict(const TrainedModel& model, const data::Dataset& dataset, uint32_t k);

// The MLP's k best labels of each row (rows x k, best first, ties to the lower id), without their
// probabilities: the shortlists the ranker trains on. The output layer's products run in `math`
// (fp32, or bf16 where the CPU has it), block by block of labels with each row's running top k
// (kernels/cpu/output_top_k.h): the rows x labels logits are never held. `stopped`, when given, is
// asked before each chunk of rows: once true, the rest is left unscored (zeros) for the caller to
// drop.
std::vector<uint32_t> TopLabels(const kernels::Model<float>& model, const data::Dataset& dataset, uint32_t k,
                                const std::function<bool()>& stopped = {},
                                kernels::OutputMath math = kernels::OutputMath::kFp32);

// The bytes TopLabelsOfRows holds besides the model, for memory plans: its chunk's activations and
// the fused top-k's lists and `threads` threads' tiles, in bf16 (the larger).
uint64_t TopLabelsWorkspaceBytes(const kernels::ModelShape& shape, uint32_t k, uint64_t threads);

// The same for `count` rows of `dataset` (row ids), into `top` (count x k).
void TopLabelsOfRows(const kernels::Model<float>& model, const data::Dataset& dataset, const uint64_t* rows,
                     size_t count, uint32_t k, kernels::OutputMath math, uint32_t* top,
                     const std::function<bool()>& stopped = {});

}  // namespace xmlt::engine
