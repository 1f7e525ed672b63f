// The fused output layer's workspace; see output_layer_workspace.h.
#include "kernels/cpu/output_layer_workspace.h"

#include <algorithm>
#include <stdexcept>
#include <string>
#include <type_traits>

namespace xmlt::kernels::cpu {

uint64_t OutputBlockLabels(uint32_t rows, uint64_t inputs) {
  // About 512 KiB of logits per block (the tile and the block's weights stay in a 2 MiB L2; 256
  // KiB blocks packed the shared operand of the three products twice as often, about 3% slower at
  // Amazon-670K's shape), at least 256 labels so that the GEMMs over a block stay efficient, and a
  // multiple of 16 floats (a cache line of AVX-512 lanes).
  const uint64_t target = (uint64_t{1} << 17) / std::max<uint64_t>(rows, 1);
  (void)inputs;
  return std::clamp<uint64_t>(target, 256, 4096) / 16 * 16;
}

template <class T>
OutputLayerWorkspace<T>::OutputLayerWorkspace(uint64_t num_labels, uint64_t inputs,
                                              uint32_t max_rows, OutputMath math)
    : math(math),
      block(OutputBlockLabels(max_rows, inputs)),
      tile_ld(block + 16),
      num_blocks((num_labels + block - 1) / block),
      block_max(num_blocks * max_rows),
      block_sum(num_blocks * max_rows),
      block_target(num_blocks * max_rows),
      row_max(max_rows),
      row_scale(max_rows),
      row_loss(max_rows),
      group_delta_in(OutputGroups(num_blocks) * max_rows * inputs),
      gradient_tiles(OutputGroups(num_blocks) * max_rows * tile_ld),
      column_sums(OutputGroups(num_blocks) * block),
      target_begin(num_blocks + 1) {
  if (math != OutputMath::kBf16) return;
  if (!std::is_same_v<T, float>) throw std::invalid_argument("bf16 output math is for float models");
  std::string why;
  if (!Bf16Available(&why)) throw std::runtime_error("--math bf16: " + why);
  const uint64_t groups = OutputGroups(num_blocks);
  input_bf16.resize(uint64_t(max_rows) * inputs);
  weight_tiles_bf16.resize(groups * block * inputs);
  gradient_tiles_bf16.resize(groups * max_rows * block);
  weight_gradient_tiles.resize(groups * block * inputs);
}

uint64_t OutputLayerWorkspaceBytes(uint64_t num_labels, uint64_t inputs, uint32_t max_rows, size_t scalar,
                                   OutputMath math) {
  const uint64_t block = OutputBlockLabels(max_rows, inputs);
  const uint64_t blocks = (num_labels + block - 1) / block, groups = OutputGroups(blocks);
  const uint64_t values = 2 * blocks * max_rows + 2 * max_rows + groups * max_rows * inputs +
                          groups * max_rows * (block + 16) + groups * block;
  // target_row and target_column grow with the batch's labels, a few bytes per label.
  uint64_t bytes = values * scalar + (blocks + 1) * max_rows * sizeof(double) + (blocks + 1) * sizeof(uint32_t);
  if (math == OutputMath::kBf16)
    bytes += sizeof(Bf16) * (uint64_t(max_rows) * inputs + groups * block * inputs + groups * max_rows * block) +
             sizeof(float) * groups * block * inputs;
  return bytes;
}

template struct OutputLayerWorkspace<float>;
template struct OutputLayerWorkspace<double>;

}  // namespace xmlt::kernels::cpu
