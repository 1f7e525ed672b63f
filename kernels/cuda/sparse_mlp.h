// Forward and backward passes of the sparse MLP on the GPU, mirroring kernels/cpu/sparse_mlp.h
// (same layout, same step rules, same order of updates) on device pointers. Everything is
// enqueued on the context's stream; nothing here synchronizes.
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <vector>

#include "kernels/cuda/device_buffer.h"
#include "kernels/cuda/gemm.h"
#include "kernels/model.h"

namespace xmlt::kernels::cuda {

// Where the kernels run: the stream, a cuBLAS handle bound to it, and the GEMM precision.
struct CudaContext {
  cudaStream_t stream = nullptr;
  cublasHandle_t blas = nullptr;
  Math math = Math::kFp32;
};

// A data::SparseBatch in device memory; the arrays are owned elsewhere.
struct DeviceBatch {
  uint32_t num_rows = 0;
  uint64_t num_entries = 0;            // feature non-zeros
  const uint64_t* feature_ptr = nullptr;  // num_rows + 1, starting at 0
  const uint32_t* feature_idx = nullptr;
  const float* feature_val = nullptr;
  const uint64_t* label_ptr = nullptr;    // num_rows + 1
  const uint32_t* label_idx = nullptr;
  uint32_t labeled_rows = 0;  // rows with at least one label, counted on the host
};

// A model's parameters in device memory, laid out as Model<float>::params (kernels/model.h): in
// fp32 (params), or kept in bf16 (params_bf16, params null; --weights bf16 under --math bf16).
struct DeviceModel {
  ModelShape shape;
  std::vector<LayerView> layers;
  float* params = nullptr;
  uint16_t* params_bf16 = nullptr;

  bool in_bf16() const { return params_bf16 != nullptr; }
  float* Weight(size_t layer) const { return params + layers[layer].weight.offset; }
  float* Bias(size_t layer) const { return params + layers[layer].bias.offset; }
  uint16_t* WeightBf16(size_t layer) const { return params_bf16 + layers[layer].weight.offset; }
  uint16_t* BiasBf16(size_t layer) const { return params_bf16 + layers[layer].bias.offset; }
};

// Activations and scratch for batches of up to max_rows rows and max_entries feature non-zeros,
// allocated once on the current device.
struct DeviceMlpWorkspace {
  DeviceMlpWorkspace(const ModelShape& shape, uint32_t max_rows, uint64_t max_entries);
  // What the constructor allocates on the current device for these bounds (CUB's scratch
  // depends on the device), and what this one holds: the same bytes.
  static uint64_t PlannedBytes(const ModelShape& shape, uint32_t max_rows, uint64_t max_entries);
  uint64_t AllocatedBytes() const;
  uint64_t Allocations() const;  // its buffers that hold memory
  uint32_t max_rows;
  uint64_t max_entries;
  std::vector<DeviceBuffer<float>> activations;  // per hidden layer: rows x units, after ReLU
  DeviceBuffer<float> logits;  // rows x labels; holds the output gradient after backward
  DeviceBuffer<float> delta, delta_prev;  // rows x widest hidden layer
  // First-layer gradient: the batch's entries sorted by feature (a transposed batch).
  DeviceBuffer<uint32_t> entry_row;       // row of each entry
  DeviceBuffer<uint32_t> entry_ids;       // 0, 1, 2, ... (filled once: the sort's input values)
  DeviceBuffer<uint32_t> sorted_feature;  // feature ids, ascending
  DeviceBuffer<uint32_t> sorted_entry;    // the entries in that order (stable: ascending within)
  DeviceBuffer<unsigned char> sort_temp;  // CUB's scratch, sized for max_entries
  int sort_bits = 32;                     // feature ids fit in this many low bits
  DeviceBuffer<double> row_loss;          // max_rows
  DeviceBuffer<double> loss_sum;          // 1: the batch's loss after Loss/TrainStep
};

// What to do with the gradient g of each parameter (cf. cpu::StepRule), on flat device buffers
// laid out as the parameters:
//  - gradient != nullptr: store it (first-layer rows outside the batch are not written);
//  - velocity != nullptr: v = momentum * v + g; w -= lr * v (lazy for first-layer rows);
//  - otherwise w -= lr * g.
// With dropout and the first layer's Adagrad as cpu::StepRule's (no weight decay):
//  - dropout: inverted dropout on every hidden layer's activations, with the CPU's masks for
//    (dropout_key, layer, batch row, unit) (kernels/dropout_mask.h);
//  - input_adagrad: the first layer's weights step s += g^2, w -= input_lr * g / (sqrt(s) + eps),
//    s in the velocity's first-layer weights (which must then be given); its bias keeps the rule
//    above.
// velocity_bf16 instead of velocity keeps that state in bf16 (--optimizer-state bf16): each value
// steps in fp32 and is stored rounded stochastically with the noise of (rounding_key, its offset),
// as the CPU's dense step does (bf16_state_math.cuh). A dense layer's weight gradient then goes
// through gradient_block (gradient_block_values floats, at least one row of the widest layer's
// inputs) a block of output rows at a time: no fp32 buffer of the layer's size.
// A model kept in bf16 (DeviceModel::params_bf16, with the dense products in bf16) steps each
// weight in fp32 from its widened value and stores it rounded stochastically with the noise of
// (weights_rounding_key, its offset), as the CPU's bf16 weights do. Its dense layers pass through
// the same block: each block of output rows is widened there for the products, then takes its
// gradient and is stepped. No fp32 copy of a layer's weights exists, and no gradient is stored.
struct DeviceStepRule {
  float lr = 0;
  float momentum = 0;
  float* velocity = nullptr;
  uint16_t* velocity_bf16 = nullptr;
  uint32_t rounding_key = 0;
  uint32_t weights_rounding_key = 0;
  float* gradient_block = nullptr;
  uint64_t gradient_block_values = 0;
  float* gradient = nullptr;
  float dropout = 0;
  uint64_t dropout_key = 0;
  bool input_adagrad = false;
  float input_lr = 0;
};

// The floats a bf16 state's gradient block holds for `shape`: whole rows of each dense layer's
// weights, up to about 4 Mi values (16 MiB), or one row where a row is longer.
uint64_t GradientBlockValues(const ModelShape& shape);

// Fills workspace->activations and workspace->logits for the batch. A model kept in bf16 widens
// each dense layer's weights into `block` (block_values floats, GradientBlockValues) a block of
// output rows at a time.
void Forward(const CudaContext& context, const DeviceModel& model, const DeviceBatch& batch,
             DeviceMlpWorkspace* workspace, float* block = nullptr, uint64_t block_values = 0);

// Forward (under the rule's dropout), loss (into workspace->loss_sum), backward, and the rule
// applied to the model.
void TrainStep(const CudaContext& context, const DeviceModel& model, const DeviceBatch& batch,
               const DeviceStepRule& rule, DeviceMlpWorkspace* workspace);

}  // namespace xmlt::kernels::cuda
