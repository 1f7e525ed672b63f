// The fused output layer of the training step: its workspace and forward pass; see output_layer.h.
#include "kernels/cpu/output_layer.h"

#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>
#include <tbb/partitioner.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>
#include <type_traits>

#include "kernels/cpu/cpu_isa.h"
#include "kernels/cpu/fast_exp.h"
#include "kernels/cpu/output_blocks.h"
#include "kernels/cpu/gemm.h"
#include "kernels/cpu/store_fence.h"

namespace xmlt::kernels::cpu {

using namespace output_blocks;

namespace {

// Adds the bias to a block's rows x width logits (row stride ld), records per row the block's max
// logit, sum of exp(z - max) and sum of the row's target logits, and leaves exp(z - max) in `out`
// (rows x width, row stride width; `logits` itself when it is the same array): the backward pass
// then needs one exponential per row and block, not one per logit.
template <class T>
void BlockStatistics(T* logits, uint64_t ld, const T* bias, const Block& blk, uint64_t b,
                     const data::SparseBatch& batch, OutputLayerWorkspace<T>* ws, T* out) {
  const uint32_t rows = batch.num_rows;
  // The rows' target logits, with the bias, before the exponentials replace them.
  double* targets = ws->block_target.data() + b * rows;
  std::fill(targets, targets + rows, 0.0);
  for (uint32_t t = ws->target_begin[b]; t < ws->target_begin[b + 1]; ++t) {
    const uint32_t r = ws->target_row[t], j = ws->target_column[t];
    targets[r] += double(T(logits[uint64_t(r) * ld + j] + bias[j]));
  }
  if constexpr (std::is_same_v<T, float>) {
    // The vector kernels of the CPU's ISA (cpu_isa.h): the same loop as below.
    const VectorKernels& vec = Vec();
    for (uint32_t r = 0; r < rows; ++r) {
      float* max = &ws->block_max[b * rows + r];
      float* sum = &ws->block_sum[b * rows + r];
      if (out == logits) {
        vec.bias_exp_in_place(logits + uint64_t(r) * ld, bias, blk.width, max, sum);
      } else {
        // Straight from the tile into `out`, streamed: one pass where an exp in place and a copy
        // out made two over the tile.
        vec.bias_exp_stream(logits + uint64_t(r) * ld, bias, blk.width, out + uint64_t(r) * blk.width, max, sum);
      }
    }
    // The streamed stores are weakly ordered: fenced before another thread reads `out`.
    if (out != logits) StoreFence();
    return;
  }
  // The max in independent lanes: one running max would chain every element on the previous.
  constexpr uint64_t kLanes = 16;
  for (uint32_t r = 0; r < rows; ++r) {
    T* z = logits + uint64_t(r) * ld;
    T lanes[kLanes];
    std::fill(lanes, lanes + kLanes, -std::numeric_limits<T>::infinity());
    uint64_t j = 0;
    for (; j + kLanes <= blk.width; j += kLanes) {
#pragma omp simd
      for (uint64_t k = 0; k < kLanes; ++k) {
        z[j + k] += bias[j + k];
        lanes[k] = lanes[k] > z[j + k] ? lanes[k] : z[j + k];
      }
    }
    for (uint64_t k = 0; j < blk.width; ++j, ++k) {
      z[j] += bias[j];
      lanes[k] = lanes[k] > z[j] ? lanes[k] : z[j];
    }
    T max = lanes[0];
    for (uint64_t k = 1; k < kLanes; ++k) max = max > lanes[k] ? max : lanes[k];
    T sum = 0;
#pragma omp simd reduction(+ : sum)
    for (uint64_t jj = 0; jj < blk.width; ++jj) {
      z[jj] = FastExp(z[jj] - max);
      sum += z[jj];
    }
    ws->block_max[b * rows + r] = max;
    ws->block_sum[b * rows + r] = sum;
    if (out != logits) std::copy(z, z + blk.width, out + uint64_t(r) * blk.width);
  }
}

// Fills ws->target_begin/row/column from the batch by a counting sort over blocks; labels past
// the model are skipped, as the evaluator skips them.
template <class T>
void GroupTargetsByBlock(const data::SparseBatch& batch, uint64_t labels, OutputLayerWorkspace<T>* ws) {
  if (batch.label_idx.size() > UINT32_MAX) throw std::length_error("batch has more than 2^32-1 labels");
  std::vector<uint32_t>& begin = ws->target_begin;
  std::fill(begin.begin(), begin.end(), 0u);
  for (const uint32_t label : batch.label_idx)
    if (label < labels) ++begin[label / ws->block + 1];
  for (uint64_t b = 0; b < ws->num_blocks; ++b) begin[b + 1] += begin[b];
  ws->target_row.resize(begin[ws->num_blocks]);
  ws->target_column.resize(begin[ws->num_blocks]);
  // Each block's next free entry; the row loop in order keeps each block's list in row order.
  std::vector<uint32_t>& next = ws->target_next;
  next.assign(begin.begin(), begin.end() - 1);
  for (uint32_t r = 0; r < batch.num_rows; ++r)
    for (uint64_t i = batch.label_ptr[r]; i < batch.label_ptr[r + 1]; ++i) {
      const uint32_t label = batch.label_idx[i];
      if (label >= labels) continue;
      const uint64_t b = label / ws->block;
      ws->target_row[next[b]] = r;
      ws->target_column[next[b]++] = uint32_t(label - b * ws->block);
    }
}

}  // namespace

template <class T>
LossResult OutputLayerForward(const Model<T>& model, const OutputTensors<T>& tensors, const data::SparseBatch& batch,
                              const T* in, T* logits, OutputLayerWorkspace<T>* ws) {
  const size_t layer = model.shape.num_layers() - 1;
  const uint64_t labels = model.shape.num_labels, inputs = model.shape.LayerInputs(layer);
  const uint32_t rows = batch.num_rows;
  const T* w = tensors.weight;
  const Bf16* w_stored = tensors.weight_bf16;
  const T* bias = tensors.bias;
  const bool bf16 = ws->math == OutputMath::kBf16;
  if (w_stored != nullptr && !bf16) throw std::logic_error("weights kept in bf16 with fp32 output products");
  if (bf16) ConvertToBf16(AsFloat(in), uint64_t(rows) * inputs, ws->input_bf16.data());
  GroupTargetsByBlock(batch, labels, ws);
  // Each block: its logits by one product, then bias, max, sum of exponentials and targets per
  // row while the block is still in cache. The blocks go in the backward pass's groups, whose
  // scratch the bf16 path uses: there the logits live only in that tile, and the backward pass
  // computes them again (a bf16 product costs less than writing and reading rows x labels floats).
  const uint64_t groups = OutputGroups(ws->num_blocks);
  tbb::parallel_for(
      tbb::blocked_range<uint64_t>(0, groups, 1),
      [&](const tbb::blocked_range<uint64_t>& range) {
        for (uint64_t g = range.begin(); g < range.end(); ++g)
        for (uint64_t b = GroupBegin(g, groups, ws->num_blocks); b < GroupBegin(g + 1, groups, ws->num_blocks); ++b) {
          const Block blk = BlockAt(b, ws->block, labels);
          if (bf16) {
            T* tile = ws->gradient_tiles.data() + g * uint64_t(rows) * ws->tile_ld;
            BlockLogitsBf16(w_stored != nullptr ? nullptr : w + blk.begin * inputs,
                            w_stored != nullptr ? w_stored + blk.begin * inputs : nullptr, blk, inputs, g, rows,
                            AsFloat(tile), ws);
            BlockStatistics(tile, blk.width, bias + blk.begin, blk, b, batch, ws, tile);
          } else {
            // Block by block, each block's rows x width logits contiguous (at begin x rows): the
            // backward pass streams them back, where the rows of a rows x labels array would be as
            // many strided streams as rows, more than the prefetchers follow (671 -> 598 ms a step
            // at Amazon-670K's shape; going through a cache-resident tile and one copy gained
            // nothing more). The exponentials go from the cache-resident tile straight to `logits`.
            T* tile = ws->gradient_tiles.data() + g * uint64_t(rows) * ws->tile_ld;
            GemmOneThread<T>(Op::kNone, Op::kTranspose, rows, int64_t(blk.width), int64_t(inputs),
                             T(1), in, int64_t(inputs), w + blk.begin * inputs, int64_t(inputs), T(0),
                             tile, int64_t(ws->tile_ld));
            // The group's next weights come in from memory while this block's exponentials run.
            if (b + 1 < GroupBegin(g + 1, groups, ws->num_blocks))
              PrefetchLines(w + (blk.begin + blk.width) * inputs, BlockAt(b + 1, ws->block, labels).width * inputs * sizeof(T));
            BlockStatistics(tile, ws->tile_ld, bias + blk.begin, blk, b, batch, ws, logits + blk.begin * rows);
          }
        }
      },
      tbb::simple_partitioner());

  // Per row, over the blocks in order: the softmax's max and normalizer, and the loss.
  uint32_t labeled = 0;
  for (uint32_t r = 0; r < rows; ++r) labeled += batch.NumLabels(r) > 0;
  const double scale = labeled > 0 ? 1.0 / labeled : 0.0;
  std::vector<double>& row_loss = ws->row_loss;
  row_loss.assign(rows, 0.0);
  tbb::parallel_for(tbb::blocked_range<uint32_t>(0, rows, 16), [&](const tbb::blocked_range<uint32_t>& range) {
  for (uint32_t r = range.begin(); r < range.end(); ++r) {
    T max = -std::numeric_limits<T>::infinity();
    for (uint64_t b = 0; b < ws->num_blocks; ++b) max = std::max(max, ws->block_max[b * rows + r]);
    double sum = 0;
    for (uint64_t b = 0; b < ws->num_blocks; ++b)
      sum += double(ws->block_sum[b * rows + r]) * std::exp(double(ws->block_max[b * rows + r] - max));
    ws->row_max[r] = max;
    const uint32_t count = batch.NumLabels(r);
    // A row without labels has no loss and no gradient.
    ws->row_scale[r] = count > 0 ? T(scale / sum) : T(0);
    if (count == 0) continue;
    double target_sum = 0;
    for (uint64_t b = 0; b < ws->num_blocks; ++b) target_sum += ws->block_target[b * rows + r];
    row_loss[r] = std::log(sum) - (target_sum - double(count) * double(max)) / count;
  }
  });
  // Summed in row order: the same loss whatever the threads did.
  double loss = 0;
  for (uint32_t r = 0; r < rows; ++r) loss += row_loss[r];
  return {loss, labeled};
}

template LossResult OutputLayerForward<float>(const Model<float>&, const OutputTensors<float>&,
                                              const data::SparseBatch&, const float*, float*,
                                              OutputLayerWorkspace<float>*);
template LossResult OutputLayerForward<double>(const Model<double>&, const OutputTensors<double>&,
                                               const data::SparseBatch&, const double*, double*,
                                               OutputLayerWorkspace<double>*);

}  // namespace xmlt::kernels::cpu
