// The fused output layer's backward pass; see output_layer.h.
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

#include "kernels/cpu/fast_exp.h"
#include "kernels/cpu/output_blocks.h"
#include "kernels/cpu/gemm.h"
#include "kernels/cpu/sparse_mlp.h"
#include "kernels/cpu/vector_ops.h"

namespace xmlt::kernels::cpu {

using namespace output_blocks;

namespace {

// Values of a block of weights kept in bf16 widened at a time for their step (16 KiB of floats).
constexpr uint64_t kWidenedPiece = 4096;

}  // namespace

template <class T>
void OutputLayerBackward(const Model<T>& model, const OutputTensors<T>& tensors, const data::SparseBatch& batch,
                         const StepRule<T>& rule, const T* in, const T* logits, T* delta_in,
                         OutputLayerWorkspace<T>* ws) {
  const size_t layer = model.shape.num_layers() - 1;
  const uint64_t labels = model.shape.num_labels, inputs = model.shape.LayerInputs(layer);
  const uint32_t rows = batch.num_rows;
  const LayerView& view = model.layers[layer];
  T* w = tensors.weight;
  Bf16* w_stored = tensors.weight_bf16;
  T* bias = tensors.bias;
  T* grad_w = rule.gradient ? rule.gradient->params.data() + view.weight.offset : nullptr;
  T* grad_b = rule.gradient ? rule.gradient->params.data() + view.bias.offset : nullptr;
  T* vel_w = rule.velocity ? rule.velocity->params.data() + view.weight.offset : nullptr;
  T* vel_b = rule.velocity ? rule.velocity->params.data() + view.bias.offset : nullptr;
  // A bf16 velocity (sparse_mlp.h) comes with bf16 products, which TrainStep checks.
  uint16_t* vel16 = rule.velocity_bf16;
  uint32_t labeled = 0;
  for (uint32_t r = 0; r < rows; ++r) labeled += batch.NumLabels(r) > 0;
  const T scale = labeled > 0 ? T(1) / T(labeled) : T(0);
  // Weight decay (sparse_mlp.h): g += decay * w for the weights, not the biases.
  const T decay = rule.weight_decay;

  const bool bf16 = ws->math == OutputMath::kBf16;
  const uint64_t groups = OutputGroups(ws->num_blocks);
  tbb::parallel_for(
      tbb::blocked_range<uint64_t>(0, groups, 1),
      [&](const tbb::blocked_range<uint64_t>& range) {
        for (uint64_t g = range.begin(); g < range.end(); ++g) {
          T* d = ws->gradient_tiles.data() + g * uint64_t(rows) * ws->tile_ld;
          Bf16* d_bf16 = bf16 ? ws->gradient_tiles_bf16.data() + g * uint64_t(rows) * ws->block : nullptr;
          const Bf16* w_bf16 = nullptr;  // the block's weights in bf16, from its logits' product
          float* dw = bf16 ? ws->weight_gradient_tiles.data() + g * ws->block * inputs : nullptr;
          T* part = ws->group_delta_in.data() + g * uint64_t(rows) * inputs;
          const uint64_t first = GroupBegin(g, groups, ws->num_blocks);
          const uint64_t last = GroupBegin(g + 1, groups, ws->num_blocks);
          for (uint64_t b = first; b < last; ++b) {
            const Block blk = BlockAt(b, ws->block, labels);
            const int64_t width = int64_t(blk.width);
            // The output gradient's row stride: the tile's, or the block's width for bf16.
            const uint64_t ldd = bf16 ? blk.width : ws->tile_ld;
            T* wb = w_stored != nullptr ? nullptr : w + blk.begin * inputs;
            Bf16* wb_stored = w_stored != nullptr ? w_stored + blk.begin * inputs : nullptr;
            // The block's weights, for the input gradient's product, come in while the rows scale.
            if (wb != nullptr) PrefetchLines(wb, blk.width * inputs * sizeof(T));
            // The block's output gradient, (softmax - target) / labeled rows, as a rows x width
            // tile (leading dimension ldd), from the exponentials the forward pass left or, in
            // bf16, from the logits computed again into the tile.
            const T* z_block = logits + blk.begin * rows;
            uint64_t ld = blk.width;
            if (bf16) {
              w_bf16 = BlockLogitsBf16(wb, wb_stored, blk, inputs, g, rows, AsFloat(d), ws);
              for (uint32_t r = 0; r < rows; ++r) {
                T* z = d + uint64_t(r) * blk.width;
                vector_ops::AddTo(z, bias + blk.begin, blk.width);
              }
              z_block = d, ld = blk.width;
            }
            // The bias gradient, the tile's column sums, is summed row by row as each row is made,
            // while the row is in L1; the targets are then taken off both.
            T* sums = ws->column_sums.data() + g * ws->block;
            std::fill(sums, sums + blk.width, T(0));
            for (uint32_t r = 0; r < rows; ++r) {
              const T* z = z_block + uint64_t(r) * ld;
              T* dr = d + uint64_t(r) * ldd;
              const T max = ws->row_max[r], s = ws->row_scale[r];
              if (s == T(0)) {
                std::fill(dr, dr + blk.width, T(0));
                continue;
              }
              if (bf16) {
                vector_ops::ScaledExp(dr, z, s, max, blk.width);
                vector_ops::AddTo(sums, dr, blk.width);
              } else {
                // The forward pass left exp(z - block max): rescale it to the row's max.
                const T f = s * FastExp(ws->block_max[b * rows + r] - max);
                vector_ops::ScaleAdd(dr, z, f, sums, blk.width);
              }
            }
            // The targets: a row without a scale (no labels) keeps its zero gradient.
            for (uint32_t t = ws->target_begin[b]; t < ws->target_begin[b + 1]; ++t) {
              const uint32_t r = ws->target_row[t];
              if (ws->row_scale[r] == T(0)) continue;
              const T target = scale / T(batch.NumLabels(r));
              d[uint64_t(r) * ldd + ws->target_column[t]] -= target;
              sums[ws->target_column[t]] -= target;
            }
            // The input gradient first: it needs the weights before this step changes them.
            if (bf16) {
              ConvertToBf16(AsFloat(d), uint64_t(rows) * blk.width, d_bf16);
              Bf16GemmOneThread(Op::kNone, Op::kNone, rows, int64_t(inputs), width, d_bf16, width,
                                w_bf16, int64_t(inputs), b != first, AsFloat(part), int64_t(inputs));
            } else {
              GemmOneThread<T>(Op::kNone, Op::kNone, rows, int64_t(inputs), width, T(1), d, int64_t(ldd),
                               wb, int64_t(inputs), b == first ? T(0) : T(1), part, int64_t(inputs));
            }
            auto column_sum = [sums](uint64_t j) { return sums[j]; };
            if (bf16) {
              // The weight gradient of the block, then the rule applied to it in one pass.
              float* target = grad_w != nullptr ? AsFloat(grad_w + blk.begin * inputs) : dw;
              Bf16GemmOneThread(Op::kTranspose, Op::kNone, width, int64_t(inputs), rows, d_bf16,
                                width, ws->input_bf16.data(), int64_t(inputs), false, target,
                                int64_t(inputs));
              const uint64_t n = blk.width * inputs;
              const uint64_t at = view.weight.offset + blk.begin * inputs;
              // The decay and the rule on the block's weights [i0, i0 + count), in fp32 at `wp`.
              auto step_weights = [&](T* wp, uint64_t i0, uint64_t count) {
                if (decay != T(0)) {
#pragma omp simd
                  for (uint64_t i = 0; i < count; ++i) target[i0 + i] += float(decay * wp[i]);
                }
                if (grad_w != nullptr) return;
                if (vel16 != nullptr) {
                  vector_ops::MomentumBf16(wp, vel16 + at + i0, dw + i0, rule.momentum, rule.lr, count,
                                           rule.rounding_key, at + i0);
                } else if (vel_w != nullptr) {
                  vector_ops::Momentum(wp, vel_w + blk.begin * inputs + i0, dw + i0, rule.momentum, rule.lr, count);
                } else {
                  vector_ops::Sgd(wp, dw + i0, rule.lr, count);
                }
              };
              if (wb_stored != nullptr) {
                // Weights kept in bf16: widened a piece at a time, stepped, stored rounded.
                T widened[kWidenedPiece];
                for (uint64_t i0 = 0; i0 < n; i0 += kWidenedPiece) {
                  const uint64_t count = std::min(kWidenedPiece, n - i0);
                  vector_ops::WidenBf16s(wb_stored + i0, widened, count);
                  step_weights(widened, i0, count);
                  vector_ops::RoundBf16(widened, wb_stored + i0, count, rule.weights_rounding_key, at + i0);
                }
              } else {
                step_weights(wb, 0, n);
              }
              // The bias.
              if (grad_w != nullptr) {
                for (uint64_t j = 0; j < blk.width; ++j) grad_b[blk.begin + j] = column_sum(j);
              } else if (vel16 != nullptr) {
                for (uint64_t j = 0; j < blk.width; ++j) {
                  const uint64_t b_at = view.bias.offset + blk.begin + j;
                  const T v = rule.momentum * T(WidenBf16(vel16[b_at])) + column_sum(j);
                  bias[blk.begin + j] -= rule.lr * v;
                  vel16[b_at] = StochasticBf16(float(v), RoundingNoise(rule.rounding_key, b_at));
                }
              } else if (vel_w != nullptr) {
                for (uint64_t j = 0; j < blk.width; ++j) {
                  T& v = vel_b[blk.begin + j];
                  v = rule.momentum * v + column_sum(j);
                  bias[blk.begin + j] -= rule.lr * v;
                }
              } else {
                for (uint64_t j = 0; j < blk.width; ++j) bias[blk.begin + j] -= rule.lr * column_sum(j);
              }
            } else if (grad_w != nullptr) {
              GemmOneThread<T>(Op::kTranspose, Op::kNone, width, int64_t(inputs), rows, T(1), d,
                               int64_t(ldd), in, int64_t(inputs), T(0), grad_w + blk.begin * inputs,
                               int64_t(inputs));
              if (decay != T(0)) {
                T* gb = grad_w + blk.begin * inputs;
                const uint64_t n = blk.width * inputs;
                for (uint64_t i = 0; i < n; ++i) gb[i] += decay * wb[i];
              }
              for (uint64_t j = 0; j < blk.width; ++j) grad_b[blk.begin + j] = column_sum(j);
            } else if (vel_w != nullptr) {
              T* vb = vel_w + blk.begin * inputs;
              GemmOneThread<T>(Op::kTranspose, Op::kNone, width, int64_t(inputs), rows, T(1), d,
                               int64_t(ldd), in, int64_t(inputs), rule.momentum, vb, int64_t(inputs));
              const uint64_t n = blk.width * inputs;
              if (decay != T(0)) {
#pragma omp simd
                for (uint64_t i = 0; i < n; ++i) {
                  vb[i] += decay * wb[i];
                  wb[i] -= rule.lr * vb[i];
                }
              } else {
                vector_ops::Sgd(wb, vb, rule.lr, n);
              }
              for (uint64_t j = 0; j < blk.width; ++j) {
                T& v = vel_b[blk.begin + j];
                v = rule.momentum * v + column_sum(j);
                bias[blk.begin + j] -= rule.lr * v;
              }
            } else {
              // w - lr (g + decay w) = (1 - lr decay) w - lr g: beta 1 without decay.
              GemmOneThread<T>(Op::kTranspose, Op::kNone, width, int64_t(inputs), rows, -rule.lr,
                               d, int64_t(ldd), in, int64_t(inputs), T(1) - rule.lr * decay, wb, int64_t(inputs));
              for (uint64_t j = 0; j < blk.width; ++j) bias[blk.begin + j] -= rule.lr * column_sum(j);
            }
          }
        }
      },
      tbb::simple_partitioner());

  // The groups' parts of the input gradient, summed in group order.
  if (delta_in == nullptr) return;
  const uint64_t count = uint64_t(rows) * inputs;
  const uint64_t stride = uint64_t(rows) * inputs;
  tbb::parallel_for(tbb::blocked_range<uint64_t>(0, count, 1 << 12),
                    [&](const tbb::blocked_range<uint64_t>& range) {
                      for (uint64_t i = range.begin(); i < range.end(); ++i) {
                        T sum = ws->group_delta_in[i];
                        for (uint64_t g = 1; g < groups; ++g) sum += ws->group_delta_in[g * stride + i];
                        delta_in[i] = sum;
                      }
                    });
}

template void OutputLayerBackward<float>(const Model<float>&, const OutputTensors<float>&, const data::SparseBatch&,
                                         const StepRule<float>&, const float*, const float*, float*,
                                         OutputLayerWorkspace<float>*);
template void OutputLayerBackward<double>(const Model<double>&, const OutputTensors<double>&,
                                          const data::SparseBatch&, const StepRule<double>&, const double*,
                                          const double*, double*, OutputLayerWorkspace<double>*);


}  // namespace xmlt::kernels::cpu
