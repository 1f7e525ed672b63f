// Dropout's masks as a counter-based hash: whether unit u of a batch row is kept in a hidden layer
// is a hash of (key, layer, row, unit), so a mask needs no generator state to save or restore, and
// every thread that computes a row draws the same mask. The dense step (sparse_mlp.cc) and the
// sampled step (sampled_step.cc) draw their masks here.
#pragma once

#include <cstddef>
#include <cstdint>

namespace xmlt::kernels::cpu {

// SplitMix64's finalizer.
inline uint64_t DropoutMix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

inline uint64_t DropoutRowKey(uint64_t key, size_t layer, uint32_t row) {
  return DropoutMix(key ^ DropoutMix(uint64_t(layer) << 32 | row));
}

// A unit is kept when the top 53 bits of its hash, as a number in [0, 1), are at least `dropout`.
inline uint64_t DropoutThreshold(double dropout) { return uint64_t(dropout * 0x1p53); }

inline bool DropoutKeepsUnit(uint64_t row_key, uint64_t unit, uint64_t threshold) {
  return (DropoutMix(row_key + unit) >> 11) >= threshold;
}

}  // namespace xmlt::kernels::cpu
