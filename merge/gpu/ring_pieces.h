// How the ring all-reduce cuts a range into near-equal pieces (host code): ring_all_reduce.cu's
// chunks, and the merge projection's model of them (benchmarks/merge_projection.cc); Adasum's
// pipeline chunks and finite-check slices (device_adasum.cu) too.
#pragma once

#include <cstddef>

namespace xmlt::merge::gpu {

// [begin, end) of a piece.
struct Range {
  size_t begin, end;
  size_t size() const { return end - begin; }
};

// Piece `index` of `count` near-equal pieces of [lo, hi).
inline Range Piece(size_t lo, size_t hi, size_t index, size_t count) {
  const size_t n = hi - lo;
  return {lo + n * index / count, lo + n * (index + 1) / count};
}

}  // namespace xmlt::merge::gpu
