// The output layer's top-k without its logits; see output_top_k.h.
#include "kernels/cpu/output_top_k.h"

#include <tbb/blocked_range.h>
#include <tbb/enumerable_thread_specific.h>
#include <tbb/parallel_for.h>
#include <tbb/partitioner.h>
#include <tbb/task_arena.h>

#include <algorithm>
#include <limits>
#include <stdexcept>
#include <string>

#include "kernels/cpu/gemm.h"
#include "kernels/cpu/output_blocks.h"
#include "kernels/cpu/output_layer_workspace.h"
#include "kernels/cpu/vector_ops.h"

namespace xmlt::kernels::cpu {

using namespace output_blocks;

namespace {

constexpr float kMinusInfinity = -std::numeric_limits<float>::infinity();
constexpr uint64_t kRun = 16;  // logits checked against a row's k-th best at once

// A thread's tile of a block's logits and, in bf16, the block's weights.
struct Tile {
  std::vector<float> logits;
  std::vector<Bf16> weights_bf16;
};

// Inserts label `label` with score `s` into a list of `*filled` of k places sorted best first:
// strictly greater moves up, so an equal score met later (a higher id) stays below.
inline void Insert(float s, uint32_t label, uint32_t k, float* best, uint32_t* best_label, uint32_t* filled) {
  if (*filled == k && !(s > best[k - 1])) return;
  uint32_t pos = *filled < k ? (*filled)++ : k - 1;
  while (pos > 0 && s > best[pos - 1]) {
    best[pos] = best[pos - 1];
    best_label[pos] = best_label[pos - 1];
    --pos;
  }
  best[pos] = s;
  best_label[pos] = label;
}

// Groups of blocks, each with its own list per row: two for each thread, to balance them. Fewer
// lists see more labels each, so their k-th best rises sooner and more runs of logits are skipped;
// the merge gives the same result for any grouping, so it may follow the thread count.
uint64_t TopKGroups(uint64_t num_blocks) {
  return std::min<uint64_t>(num_blocks, 2 * uint64_t(std::max(1, tbb::this_task_arena::max_concurrency())));
}

// Whether (s, a) comes before (t, b) in the result's order: higher score, then lower id.
inline bool Before(float s, uint32_t a, float t, uint32_t b) { return s != t ? s > t : a < b; }

}  // namespace

OutputTopKWorkspace::OutputTopKWorkspace(const ModelShape& shape, uint32_t max_rows, uint32_t k, OutputMath math)
    : math(math), max_rows(max_rows), k(k) {
  if (math == OutputMath::kTf32) throw std::invalid_argument("tf32 is for CUDA devices: the CPU computes in fp32 or bf16");
  std::string why;
  if (math == OutputMath::kBf16 && !Bf16Available(&why)) throw std::runtime_error("bf16 products: " + why);
  const uint64_t inputs = shape.hidden.back();
  block = OutputBlockLabels(max_rows, inputs);
  num_blocks = (shape.num_labels + block - 1) / block;
  groups = TopKGroups(num_blocks);
  best.resize(groups * max_rows * k);
  best_label.resize(groups * max_rows * k);
  filled.resize(groups * max_rows);
  if (math == OutputMath::kBf16) input_bf16.resize(uint64_t(max_rows) * inputs);
}

uint64_t OutputTopKWorkspaceBytes(const ModelShape& shape, uint32_t max_rows, uint32_t k, OutputMath math,
                                  uint64_t threads) {
  const uint64_t inputs = shape.hidden.back();
  const uint64_t block = OutputBlockLabels(max_rows, inputs);
  const uint64_t groups = TopKGroups((shape.num_labels + block - 1) / block);
  const bool bf16 = math == OutputMath::kBf16;
  uint64_t bytes = groups * max_rows * (uint64_t(k) * 8 + 4);
  if (bf16) bytes += uint64_t(max_rows) * inputs * sizeof(Bf16);
  return bytes + threads * (uint64_t(max_rows) * block * sizeof(float) + (bf16 ? block * inputs * sizeof(Bf16) : 0));
}

void OutputTopK(const Model<float>& model, const float* in, uint32_t rows, uint32_t* labels, float* scores,
                OutputTopKWorkspace* ws) {
  if (rows > ws->max_rows) throw std::logic_error("OutputTopK: more rows than the workspace holds");
  const uint32_t k = ws->k;
  if (k == 0 || rows == 0) return;
  const size_t layer = model.shape.num_layers() - 1;
  const uint64_t num_labels = model.shape.num_labels, inputs = model.shape.LayerInputs(layer);
  const float* w = model.Weight(layer);
  const float* bias = model.Bias(layer);
  const bool bf16 = ws->math == OutputMath::kBf16;
  if (bf16) ConvertToBf16(in, uint64_t(rows) * inputs, ws->input_bf16.data());
  std::fill(ws->filled.begin(), ws->filled.end(), 0u);
  tbb::enumerable_thread_specific<Tile> tiles;

  // Each group of blocks keeps its own list per row, so the groups run in parallel.
  tbb::parallel_for(
      tbb::blocked_range<uint64_t>(0, ws->groups, 1),
      [&](const tbb::blocked_range<uint64_t>& range) {
        Tile& tile = tiles.local();
        tile.logits.resize(uint64_t(ws->max_rows) * ws->block);
        for (uint64_t g = range.begin(); g < range.end(); ++g) {
          float* best = ws->best.data() + g * ws->max_rows * k;
          uint32_t* best_label = ws->best_label.data() + g * ws->max_rows * k;
          uint32_t* filled = ws->filled.data() + g * ws->max_rows;
          for (uint64_t b = GroupBegin(g, ws->groups, ws->num_blocks); b < GroupBegin(g + 1, ws->groups, ws->num_blocks);
               ++b) {
            const Block blk = BlockAt(b, ws->block, num_labels);
            float* z_block = tile.logits.data();
            if (bf16) {
              tile.weights_bf16.resize(ws->block * inputs);
              ConvertToBf16(w + blk.begin * inputs, blk.width * inputs, tile.weights_bf16.data());
              Bf16GemmOneThread(Op::kNone, Op::kTranspose, rows, int64_t(blk.width), int64_t(inputs),
                                ws->input_bf16.data(), int64_t(inputs), tile.weights_bf16.data(), int64_t(inputs), false,
                                z_block, int64_t(blk.width));
            } else {
              GemmOneThread<float>(Op::kNone, Op::kTranspose, rows, int64_t(blk.width), int64_t(inputs), 1.0f, in,
                                   int64_t(inputs), w + blk.begin * inputs, int64_t(inputs), 0.0f, z_block,
                                   int64_t(blk.width));
            }
            for (uint32_t r = 0; r < rows; ++r) {
              float* z = z_block + uint64_t(r) * blk.width;
              vector_ops::AddTo(z, bias + blk.begin, blk.width);
              float* row_best = best + uint64_t(r) * k;
              uint32_t* row_label = best_label + uint64_t(r) * k;
              // Sixteen logits at a time: once the list is full, a run whose largest does not beat
              // the k-th best adds nothing, and after the first blocks almost every run ends there
              // (a block of b before it lets in about k / b labels). The max passes over a NaN, which
              // ranks as -infinity and so never enters a full list.
              for (uint64_t j = 0; j < blk.width; j += kRun) {
                const uint64_t n = std::min<uint64_t>(kRun, blk.width - j);
                if (filled[r] == k) {
                  float max = kMinusInfinity;
#pragma omp simd reduction(max : max)
                  for (uint64_t t = 0; t < n; ++t) max = z[j + t] > max ? z[j + t] : max;
                  if (!(max > row_best[k - 1])) continue;
                }
                for (uint64_t t = j; t < j + n; ++t) {
                  const float s = z[t] == z[t] ? z[t] : kMinusInfinity;
                  Insert(s, uint32_t(blk.begin + t), k, row_best, row_label, &filled[r]);
                }
              }
            }
          }
        }
      },
      tbb::simple_partitioner());

  // Per row, the groups' lists merged: each is sorted in the result's order, and the order is total,
  // so the merge is the row's top k whatever cut the labels into groups.
  tbb::parallel_for(tbb::blocked_range<uint32_t>(0, rows, 8), [&](const tbb::blocked_range<uint32_t>& range) {
    std::vector<uint32_t> head(ws->groups);
    for (uint32_t r = range.begin(); r < range.end(); ++r) {
      std::fill(head.begin(), head.end(), 0u);
      for (uint32_t i = 0; i < k; ++i) {
        uint64_t from = ws->groups;
        float top = kMinusInfinity;
        uint32_t top_label = std::numeric_limits<uint32_t>::max();
        for (uint64_t g = 0; g < ws->groups; ++g) {
          if (head[g] >= ws->filled[g * ws->max_rows + r]) continue;
          const uint64_t at = (g * ws->max_rows + r) * k + head[g];
          if (from == ws->groups || Before(ws->best[at], ws->best_label[at], top, top_label)) {
            from = g;
            top = ws->best[at];
            top_label = ws->best_label[at];
          }
        }
        if (from < ws->groups) ++head[from];
        labels[uint64_t(r) * k + i] = top_label;
        if (scores != nullptr) scores[uint64_t(r) * k + i] = top;
      }
    }
  });
}

}  // namespace xmlt::kernels::cpu
