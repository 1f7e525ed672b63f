// The k best labels of each row straight from the last hidden layer, for the ranker's shortlists:
// the output layer's logits made block by block of labels (one product per block, in fp32 or with
// bf16 inputs and fp32 sums) and scanned against each row's running k-th best while the block is
// in cache. The rows x labels logits are never held: at 670,091 labels, writing and reading them
// again for a separate top-k cost more than the products (docs/benchmarks/ranker.md).
#pragma once

#include <cstdint>
#include <vector>

#include "kernels/cpu/bf16_gemm.h"
#include "kernels/model.h"
#include "kernels/output_math.h"

namespace xmlt::kernels::cpu {

// Scratch for chunks of up to max_rows rows, allocated once. With OutputMath::kBf16 the
// constructor throws std::runtime_error where this build or CPU has no native bf16.
struct OutputTopKWorkspace {
  OutputTopKWorkspace(const ModelShape& shape, uint32_t max_rows, uint32_t k, OutputMath math);
  OutputMath math;
  uint32_t max_rows, k;
  uint64_t block, num_blocks, groups;
  std::vector<float> best;              // per group: rows x k scores, best first
  std::vector<uint32_t> best_label;     // per group: rows x k label ids (filled[g * rows + r] of them)
  std::vector<uint32_t> filled;         // per group and row: how many of its k places hold a label
  std::vector<Bf16> input_bf16;         // bf16 only: the chunk's input, rows x inputs
};

// The bytes an OutputTopKWorkspace holds, with the tiles of `threads` threads, for memory plans.
uint64_t OutputTopKWorkspaceBytes(const ModelShape& shape, uint32_t max_rows, uint32_t k, OutputMath math,
                                  uint64_t threads);

// `in`: rows x the last hidden layer's width (its activations). Writes rows x k label ids, best
// first, ties to the lower id, a NaN logit ranked as -infinity, as TopK over the logits does
// (kernels/cpu/top_k.h), and, when `scores` is non-null, their logits; places beyond the label
// count get UINT32_MAX and -infinity. Deterministic: the same labels and scores whatever the
// thread count. In bf16 a row's list is TopK's over logits rounded as the products round them.
void OutputTopK(const Model<float>& model, const float* in, uint32_t rows, uint32_t* labels, float* scores,
                OutputTopKWorkspace* ws);

}  // namespace xmlt::kernels::cpu
