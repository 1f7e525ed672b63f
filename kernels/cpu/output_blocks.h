// The label blocks of the fused output layer and the steps its forward and backward passes share
// (output_layer.cc, output_layer_backward.cc). Internal to the CPU kernels.
#pragma once

#include <algorithm>
#include <cstdint>
#include <stdexcept>
#include <type_traits>

#include "base/near_equal_pieces.h"
#include "kernels/cpu/bf16_gemm.h"
#include "kernels/cpu/output_layer_workspace.h"

namespace xmlt::kernels::cpu::output_blocks {

inline uint64_t GroupBegin(uint64_t group, uint64_t groups, uint64_t num_blocks) {
  return base::Piece(0, num_blocks, group, groups).begin;
}

struct Block {
  uint64_t begin, width;
};

inline Block BlockAt(uint64_t index, uint64_t block, uint64_t num_labels) {
  const uint64_t begin = index * block;
  return {begin, std::min(block, num_labels - begin)};
}

// The bf16 products exist for float only; in double (the gradient checks) these are never reached.
template <class T>
float* AsFloat(T* p) {
  if constexpr (std::is_same_v<T, float>) {
    return p;
  } else {
    (void)p;
    throw std::logic_error("bf16 output math in double");
  }
}
template <class T>
const float* AsFloat(const T* p) {
  return AsFloat(const_cast<T*>(p));
}

// Asks for the `bytes` at p to be brought into cache, a line at a time, and returns without
// waiting. A block's weights are first read by a product whose register tiles walk them a panel
// of columns at a time, a stride the hardware prefetchers follow poorly from memory; asked for in
// order while the exponentials of the block run, they arrive in time, and the products that read
// them come closer to the FMA peak inside the step (measured: docs/benchmarks/isa.md, fourth round).
inline void PrefetchLines(const void* p, uint64_t bytes) {
  const char* line = static_cast<const char*>(p);
  for (uint64_t offset = 0; offset < bytes; offset += 64) __builtin_prefetch(line + offset, 0, 2);
}

// A block's logits without the bias, rows x width into `tile` (row stride width), by a bf16
// product. Returns the block's weights in bf16, which the input gradient's product reads too:
// `stored`, the block of weights kept in bf16, where there is one; else the fp32 block converted
// into the group's weight tile.
template <class T>
const Bf16* BlockLogitsBf16(const T* w_block, const Bf16* stored, const Block& blk, uint64_t inputs, uint64_t group,
                            uint32_t rows, float* tile, OutputLayerWorkspace<T>* ws) {
  const Bf16* wt = stored;
  if (wt == nullptr) {
    Bf16* converted = ws->weight_tiles_bf16.data() + group * ws->block * inputs;
    ConvertToBf16(AsFloat(w_block), blk.width * inputs, converted);
    wt = converted;
  }
  Bf16GemmOneThread(Op::kNone, Op::kTranspose, rows, int64_t(blk.width), int64_t(inputs), ws->input_bf16.data(),
                    int64_t(inputs), wt, int64_t(inputs), false, tile, int64_t(blk.width));
  return wt;
}

}  // namespace xmlt::kernels::cpu::output_blocks
