// Dropout's masks as a counter-based hash: whether unit u of a batch row is kept in a hidden layer
// is a hash of (key, layer, row, unit), so a mask needs no generator state to save or restore, and
// every thread that computes a row draws the same mask. The CPU's dense and sampled steps
// (cpu/sparse_mlp.cc, lsh/sampled_step.cc) and the GPU's step (cuda/sparse_mlp.cu) draw their
// masks here, so a replica draws the same masks on either.
#pragma once

#include <cstddef>
#include <cstdint>

// Callable from CUDA kernels too (the simulated GPUs compile them as host code).
#if defined(__CUDACC__)
#define XMLT_DROPOUT_FN __host__ __device__ inline
#else
#define XMLT_DROPOUT_FN inline
#endif

namespace xmlt::kernels {

// SplitMix64's finalizer.
XMLT_DROPOUT_FN uint64_t DropoutMix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

XMLT_DROPOUT_FN uint64_t DropoutRowKey(uint64_t key, size_t layer, uint32_t row) {
  return DropoutMix(key ^ DropoutMix(uint64_t(layer) << 32 | row));
}

// A unit is kept when the top 53 bits of its hash, as a number in [0, 1), are at least `dropout`.
XMLT_DROPOUT_FN uint64_t DropoutThreshold(double dropout) { return uint64_t(dropout * 0x1p53); }

XMLT_DROPOUT_FN bool DropoutKeepsUnit(uint64_t row_key, uint64_t unit, uint64_t threshold) {
  return (DropoutMix(row_key + unit) >> 11) >= threshold;
}

}  // namespace xmlt::kernels
