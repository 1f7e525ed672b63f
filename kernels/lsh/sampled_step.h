// SLIDE's training step (Chen et al., MLSys 2020) on the CPU: each row of a batch trains on its own
// active set of output labels instead of all of them. The row goes forward through the hidden
// layers as in the dense step; the last hidden activation queries the LSH tables over the output
// layer (label_tables.h), whose buckets give the labels with likely large logits; the
// row's own labels are always added, and random labels pad a small set up to a minimum (SLIDE's
// sampling mode). Softmax cross-entropy runs over the active set only, and the SGD step touches
// only the active labels' output rows, the biases, the hidden layers and the first-layer rows of
// the row's features. The rows of a batch are spread over the threads and update the shared model
// as they go, without locks (HOGWILD): with one thread the step is deterministic.
#pragma once

#include <cstdint>
#include <random>
#include <vector>

#include "data/sparse_batch.h"
#include "kernels/cpu/softmax_loss.h"
#include "kernels/lsh/label_tables.h"
#include "kernels/model.h"

namespace xmlt::kernels::lsh {

// One thread's scratch for its rows, sized on first use.
struct SampledRowScratch {
  std::vector<std::vector<float>> hidden;  // per hidden layer: the row's activation after ReLU
  std::vector<uint32_t> active;            // the row's active labels
  std::vector<float> logits;               // per active label
  std::vector<float> delta, delta_below;   // gradients flowing down the hidden layers
  std::vector<uint32_t> seen;              // the tables' per-label stamps
  uint32_t stamp = 0;
  // active[padded_from..] are the random padding labels, each standing for 1 / q of the labels
  // left out (q: the chance that one of them was drawn); their logits get + padding_log_weight
  // (log 1/q) in the softmax, the sampled softmax's correction. 0: uncorrected, as SLIDE.
  size_t padded_from = SIZE_MAX;
  float padding_log_weight = 0.0f;
};

// What the step adds to plain SGD, as the dense step's StepRule (cpu/sparse_mlp.h) does:
//  - dropout on every hidden layer's activations (inverted: the kept ones scaled by
//    1 / (1 - dropout)), with the dense step's masks for (dropout_key, layer, batch row, unit);
//  - Adagrad on the first layer's weights: per coordinate s += g^2, w -= input_lr * g / (sqrt(s) +
//    eps), with g the row's share of the batch-mean gradient (its gradient x gradient_scale) and s
//    in input_squares (features x units, the layer's shape); its bias keeps plain SGD.
// All 0: the plain step.
struct SampledRegularization {
  float dropout = 0;
  uint64_t dropout_key = 0;
  float input_lr = 0;
  float* input_squares = nullptr;  // required when input_lr > 0
  float gradient_scale = 1;  // the row's weight in the batch mean: 1 / the batch's labeled rows
};

// The row's hidden activations into s->hidden (dropped out under `regularization`).
void SampledForwardHidden(const Model<float>& model, const data::SparseBatch& batch, uint32_t row,
                          SampledRowScratch* s, const SampledRegularization& regularization = {});

// The row's active labels into s->active: the tables' candidates for s->hidden.back() (at most
// `bucket_cap` a bucket), the row's labels, then labels drawn from `rng` until there are
// `min_active` (or every label). Distinct, in no particular order; the padding last, from
// s->padded_from, with s->padding_log_weight = log(labels not yet active / padding drawn).
void SampledActiveLabels(const LabelTables& tables, const data::SparseBatch& batch,
                         uint32_t row, size_t bucket_cap, size_t min_active, std::mt19937_64* rng,
                         SampledRowScratch* s);

// Softmax cross-entropy of the row over s->active (which must hold the row's labels; the padding's
// logits raised by s->padding_log_weight in the softmax), and one SGD
// step of rate `lr` on it, back through the layers SampledForwardHidden went up (under the same
// `regularization`). The output rows it updates are marked in `touched` (one byte per label) when
// given. Returns the row's loss; a row without labels trains nothing and returns 0.
double SampledBackward(Model<float>* model, const data::SparseBatch& batch, uint32_t row, float lr,
                       SampledRowScratch* s, std::vector<uint8_t>* touched,
                       const SampledRegularization& regularization = {});

struct SampledStepOptions {
  size_t bucket_cap = 128;   // SLIDE's bucket size
  size_t min_active = 1000;  // SLIDE pads an active set below 1,500 to 1,000 labels
  uint64_t seed = 1;         // with the step's index, the padding labels of every row
  // Weight each padding label by the labels it stands for (the sampled softmax's correction):
  // without it, a label outside the tables' candidates is pushed down only as often as it is drawn.
  bool weight_padding = true;
};

// What the active sets held, summed over the rows that trained.
struct SampledStepStats {
  uint64_t rows = 0;
  uint64_t active_labels = 0;   // the active sets' sizes
  uint64_t padding_labels = 0;  // of which random padding
};

// The batch's step: every row forward, its active set, its step at rate lr / labeled rows (the
// batch-mean loss, as the dense step), rows spread over the threads, HOGWILD. `step` makes each
// row's padding draw its own. `regularization`'s gradient_scale is set here. Returns the loss
// summed over the rows with labels.
cpu::LossResult SampledTrainStep(Model<float>* model, const data::SparseBatch& batch, float lr,
                            const LabelTables& tables, const SampledStepOptions& options,
                            uint64_t step, std::vector<uint8_t>* touched,
                            SampledStepStats* stats = nullptr,
                            SampledRegularization regularization = {});

}  // namespace xmlt::kernels::lsh
