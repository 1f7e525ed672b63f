// Forward and backward passes of the sparse MLP on the CPU: sparse input layer, dense ReLU hidden
// layers, linear output layer, softmax cross-entropy. Templated on the scalar so that the same
// code runs in float for training and in double for the finite-difference gradient checks.
#pragma once

#include <cstdint>
#include <vector>

#include "data/sparse_batch.h"
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
  std::vector<T> logits;                    // rows x labels after Forward (TrainStep's scratch)
  std::vector<T> delta, delta_prev;         // rows x widest hidden layer: gradients flowing down
  std::vector<uint64_t> by_feature;         // feature id << 32 | batch entry, sorted (first layer)
  std::vector<uint32_t> entry_row;          // row of each batch entry
  std::vector<uint32_t> group_begin;        // start of each feature's run in by_feature
  OutputLayerWorkspace<T> output;           // the training step's fused output layer
};

// What to do with the gradient g of each parameter tensor.
//  - gradient != nullptr: store it there (gradient = g; first-layer rows outside the batch are not
//    written, so pass a zeroed model).
//  - velocity != nullptr: heavy-ball momentum, v = momentum * v + g; w -= lr * v (first-layer rows
//    outside the batch are left alone: lazy momentum, as in sparse optimizers).
//  - otherwise plain SGD, w -= lr * g, fused into the products that compute g.
template <class T>
struct StepRule {
  T lr = 0;
  T momentum = 0;
  Model<T>* velocity = nullptr;
  Model<T>* gradient = nullptr;
};

// Fills workspace->activations and workspace->logits for the batch.
template <class T>
void Forward(const Model<T>& model, const data::SparseBatch& batch, MlpWorkspace<T>* workspace);

// Forward, loss, backward, and the step rule applied to `model` (or the gradient stored).
template <class T>
LossResult TrainStep(Model<T>* model, const data::SparseBatch& batch, const StepRule<T>& rule,
                     MlpWorkspace<T>* workspace);

}  // namespace xmlt::kernels::cpu
