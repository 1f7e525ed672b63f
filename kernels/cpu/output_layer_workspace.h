// The scratch of the fused output layer (output_layer.h) and how it cuts the labels into blocks
// and the blocks into groups: the forward and backward passes share it, and memory plans size it.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "kernels/cpu/bf16_gemm.h"
#include "kernels/output_math.h"

namespace xmlt::kernels::cpu {

// Groups of blocks for the backward pass: a fixed count, so the input gradient is summed in the
// same order whatever the thread count, and enough of them to balance the threads.
constexpr uint64_t kMaxOutputGroups = 32;

inline uint64_t OutputGroups(uint64_t num_blocks) { return std::min(num_blocks, kMaxOutputGroups); }

// Scratch of the fused output layer for batches of up to max_rows rows, allocated once. With
// OutputMath::kBf16 (float only) the three products take bfloat16 copies of their inputs, made
// block by block; the constructor throws std::invalid_argument for bf16 in double and
// std::runtime_error where this build or CPU has no native bf16 (Bf16Available says why).
template <class T>
struct OutputLayerWorkspace {
  OutputLayerWorkspace(uint64_t num_labels, uint64_t inputs, uint32_t max_rows,
                       OutputMath math = OutputMath::kFp32);
  OutputMath math = OutputMath::kFp32;
  uint64_t block = 0;                  // labels per block
  // Row stride of the gradient tiles: a cache line past the block, since a power-of-two stride
  // (2 KiB at 512 labels) puts the same column of every row in the same two sets of L1, where the
  // products' row streams then evict each other (the bf16 path keeps rows of the block's width).
  uint64_t tile_ld = 0;
  uint64_t num_blocks = 0;
  std::vector<T> block_max, block_sum;  // per block and row: max logit, sum exp(z - max)
  std::vector<double> block_target;     // per block and row: sum of the row's target logits
  std::vector<T> row_max, row_scale;    // per row: max logit, scale / sum exp(z - max)
  std::vector<double> row_loss;         // per row: its cross-entropy
  std::vector<T> group_delta_in;        // per group: rows x inputs partial input gradient
  std::vector<T> gradient_tiles;        // per group: rows x block output gradient, row stride tile_ld
  std::vector<T> column_sums;           // per group: the block's bias gradient
  // The batch's targets grouped by block (made by the forward pass, used by both passes): block
  // b's are entries [target_begin[b], target_begin[b + 1]), each a row and a label's place in the
  // block, in row order and the row's label order. A block then visits only its own targets,
  // not every label of every row (at Delicious-200K's shape, 75 labels a row, 803 blocks).
  std::vector<uint32_t> target_begin, target_row, target_column, target_next;
  // bf16 only: the layer's input (rows x inputs, made by the forward pass for the backward pass),
  // and per group a block of the weights, of the output gradient and of the weight gradient.
  std::vector<Bf16> input_bf16, weight_tiles_bf16, gradient_tiles_bf16;
  std::vector<float> weight_gradient_tiles;
};

// Labels per block for a batch of `rows` rows: the block of logits (rows x block) and of the
// weights (block x inputs) should stay in the core's cache between the passes over them.
uint64_t OutputBlockLabels(uint32_t rows, uint64_t inputs);

// The bytes an OutputLayerWorkspace of these sizes holds, for memory plans (scalar: sizeof(T)).
uint64_t OutputLayerWorkspaceBytes(uint64_t num_labels, uint64_t inputs, uint32_t max_rows, size_t scalar,
                                   OutputMath math = OutputMath::kFp32);

}  // namespace xmlt::kernels::cpu
