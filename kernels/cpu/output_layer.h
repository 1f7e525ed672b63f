// The training step's output layer, fused over blocks of labels: logits, softmax cross-entropy,
// the input gradient and the weight update, with each block of the logits and of the weights
// touched while it is in cache. The unfused sequence (bias copy, GEMM, three softmax passes,
// two GEMMs, a column-sum pass and an update pass) streams the rows x labels logits and the
// labels x hidden weights through memory several times; at 670,091 labels those passes cost a
// good part of the GEMMs' own time (measured: docs/benchmarks/full-shapes.md). Here the logits are
// written once and read once, and the weights and their momentum are read and written once after
// the forward pass.
//
// The result is bit-for-bit independent of the thread count: blocks are grouped into a fixed
// number of contiguous groups, each group accumulates its part of the input gradient in block
// order, and the groups are summed in order.
#pragma once

#include <cstdint>
#include <vector>

#include "data/sparse_batch.h"
#include "kernels/cpu/output_layer_workspace.h"
#include "kernels/cpu/softmax_loss.h"
#include "kernels/model.h"
#include "kernels/output_math.h"

namespace xmlt::kernels::cpu {

template <class T>
struct StepRule;

// Where a step finds the last layer's tensors: the fp32 weight, or with the weights kept in bf16
// (StepRule::weights_bf16) the weight there (weight null), and the fp32 bias (with bf16 weights, the
// step's widened copy).
template <class T>
struct OutputTensors {
  T* weight = nullptr;
  uint16_t* weight_bf16 = nullptr;
  T* bias = nullptr;
};

// logits = in * W^T + b for the last layer (in: rows x inputs), and the per-row softmax
// statistics; returns the batch's cross-entropy (sum over rows with labels, mean over labels).
// `logits` (rows x labels elements) receives, block by block with each block's rows x width tile
// contiguous, exp(z - the row's max in that block): scratch for OutputLayerBackward, not what
// Forward leaves there. In bf16 the logits are kept only block by block in the workspace:
// `logits` is not touched and may be null.
// A weight kept in bf16 takes the products as it is: it needs OutputMath::kBf16.
template <class T>
LossResult OutputLayerForward(const Model<T>& model, const OutputTensors<T>& tensors, const data::SparseBatch& batch,
                              const T* in, T* logits, OutputLayerWorkspace<T>* ws);

// Given OutputLayerForward's logits and statistics (and, in bf16, its copy of `in`): writes
// dLoss/dIn (rows x inputs, loss as the mean over rows with labels) into delta_in, then applies
// `rule` to the last layer's weight and bias, block by block. A weight kept in bf16 is widened a
// piece of a block at a time, steps in fp32, and is stored rounded with the rule's weight noise.
template <class T>
void OutputLayerBackward(const Model<T>& model, const OutputTensors<T>& tensors, const data::SparseBatch& batch,
                         const StepRule<T>& rule, const T* in, const T* logits, T* delta_in,
                         OutputLayerWorkspace<T>* ws);

}  // namespace xmlt::kernels::cpu
