// Forward and backward passes of the sparse MLP on the CPU: sparse input layer, dense ReLU hidden
// layers, linear output layer, softmax cross-entropy. Templated on the scalar so that the same
// code runs in float for training and in double for the finite-difference gradient checks.
#pragma once

#include <cstdint>
#include <vector>

#include "data/sparse_batch.h"
#include "kernels/cpu/cache_line_allocator.h"
#include "kernels/cpu/output_layer.h"
#include "kernels/cpu/softmax_loss.h"
#include "kernels/model.h"

namespace xmlt::kernels::cpu {

// Activations and scratch for batches of up to max_rows rows, allocated once; `math` is the
// training step's output-layer arithmetic (see OutputLayerWorkspace).
template <class T>
struct MlpWorkspace {
  MlpWorkspace(const ModelShape& shape, uint32_t max_rows, OutputMath math = OutputMath::kFp32);
  uint32_t max_rows;
  std::vector<std::vector<T>> activations;  // per hidden layer: rows x units, after ReLU
  std::vector<T, CacheLineAllocator<T>> logits;  // rows x labels after Forward (TrainStep's scratch)
  std::vector<T> delta, delta_prev;         // rows x widest hidden layer: gradients flowing down
  std::vector<uint64_t> by_feature;         // feature id << 32 | batch entry, sorted (first layer)
  std::vector<uint32_t> entry_row;          // row of each batch entry
  std::vector<uint32_t> group_begin;        // start of each feature's run in by_feature
  std::vector<T> velocity_scratch;          // a dense tensor's bf16 velocity, widened for its product
  // Where the step finds each layer's weight and bias in fp32 (TrainStep sets them): the model's
  // own or, with the weights kept in bf16, `widened` for the biases and the hidden layers' weights
  // and null for the first and the last layer's weights (read and written in bf16 a row or a piece
  // of a block at a time).
  std::vector<T*> weight_at, bias_at;
  std::vector<T> widened;
  OutputLayerWorkspace<T> output;           // the training step's fused output layer
};

// What to do with the gradient g of each parameter tensor.
//  - gradient != nullptr: store it there (gradient = g; first-layer rows outside the batch are not
//    written, so pass a zeroed model).
//  - velocity != nullptr: heavy-ball momentum, v = momentum * v + g; w -= lr * v (first-layer rows
//    outside the batch are left alone: lazy momentum, as in sparse optimizers).
//  - otherwise plain SGD, w -= lr * g, fused into the products that compute g.
// Regularization (both 0 by default, which leaves the step exactly as without them):
//  - weight_decay: L2 weight decay, g += weight_decay * w for every weight matrix (not the biases):
//    the gradient of weight_decay / 2 * ||W||^2. The first layer is decayed lazily: only the rows
//    of the features the batch holds (the rows the step touches anyway), so a step costs no pass
//    over the whole feature table; its penalty is weight_decay / 2 * the squared norm of those rows.
//  - dropout: each hidden unit's activation (after the ReLU) is zeroed with probability `dropout`
//    and the kept ones scaled by 1 / (1 - dropout) (inverted dropout: evaluation uses the plain
//    Forward). The mask is a hash of (dropout_key, layer, batch row, unit): the caller makes the key
//    from the run's seed and the step, so a resumed run draws the same masks.
// The first layer's weights may take Adagrad instead (input_adagrad, with a velocity buffer):
// per coordinate, s += g^2 and w -= input_lr * g / (sqrt(s) + eps), s kept in the velocity's
// first-layer weights (its bias keeps the rule above). Lazy as above: only the rows of the batch's
// features, so a rare feature's row keeps a large step where a frequent one's has shrunk.
// The velocity (momentum and Adagrad's squares) may be kept in bfloat16 instead (velocity_bf16,
// laid out like the parameters, with the output layer's products in bf16): each value steps in
// fp32 as above and is stored rounded stochastically (stochastic_rounding.h), with the noise of
// (rounding_key, its offset).
// The weights may be kept in bfloat16 too (weights_bf16, laid out like the parameters, whose fp32
// buffer model->params is then empty; float only, with the output layer's products in bf16 and no
// gradient output): each tensor the step writes is widened, steps in fp32 as above (the products
// reading the bf16 values as they are), and is stored rounded stochastically with the noise of
// (weights_rounding_key, its offset). No fp32 copy of them outlives the step: the first layer's
// rows and the output layer's blocks are widened a piece at a time, the biases and the hidden
// layers' weights (the small tensors) into the workspace for the step.
template <class T>
struct StepRule {
  T lr = 0;
  T momentum = 0;
  Model<T>* velocity = nullptr;
  Model<T>* gradient = nullptr;
  T weight_decay = 0;
  T dropout = 0;
  uint64_t dropout_key = 0;
  bool input_adagrad = false;
  T input_lr = 0;
  uint16_t* velocity_bf16 = nullptr;
  uint32_t rounding_key = 0;
  uint16_t* weights_bf16 = nullptr;
  uint32_t weights_rounding_key = 0;
};

// Adagrad's epsilon, added to the root of the accumulated squares (PyTorch's default).
inline constexpr double kAdagradEpsilon = 1e-10;

// Whether dropout keeps unit `unit` of batch row `row` in hidden layer `layer` for this key; about
// a fraction 1 - dropout of them. The same for float and double, so the tests can rebuild a mask.
bool DropoutKeeps(uint64_t key, size_t layer, uint32_t row, uint64_t unit, double dropout);

// Fills workspace->activations and workspace->logits for the batch.
template <class T>
void Forward(const Model<T>& model, const data::SparseBatch& batch, MlpWorkspace<T>* workspace);

// The hidden layers' forward pass alone, into `activations` (per hidden layer rows x units, resized
// as needed), without an MlpWorkspace's logits: what the shortlists' top-k reads
// (kernels/cpu/output_top_k.h).
template <class T>
void HiddenActivations(const Model<T>& model, const data::SparseBatch& batch, std::vector<std::vector<T>>* activations);

// Forward as TrainStep computes it under `rule`: with its dropout masks on the hidden activations
// (Forward when rule.dropout is 0). The finite-difference checks differentiate this. An fp32 model
// only (rule.weights_bf16 null).
template <class T>
void TrainingForward(const Model<T>& model, const data::SparseBatch& batch, const StepRule<T>& rule,
                     MlpWorkspace<T>* workspace);

// The L2 penalty whose gradient TrainStep adds: weight_decay / 2 x (the squared weights of every
// layer but the first, plus the squared first-layer rows of the features present in the batch).
template <class T>
double WeightDecayPenalty(const Model<T>& model, const data::SparseBatch& batch, double weight_decay);

// Forward, loss, backward, and the step rule applied to `model` (or the gradient stored); with
// rule.weights_bf16, `model` gives the shape and layout and its params are not read.
template <class T>
LossResult TrainStep(Model<T>* model, const data::SparseBatch& batch, const StepRule<T>& rule,
                     MlpWorkspace<T>* workspace);

}  // namespace xmlt::kernels::cpu
