// Cutting [lo, hi) into `count` near-equal pieces, piece i = [lo + n i / count, lo + n (i + 1) / count)
// with n = hi - lo: every place that splits work this way (the ring's chunks, the host merges'
// partitions, the output layer's groups of blocks, the devices' shares of an evaluation, the
// simulated NCCL's ring) cuts at the same points, so their pieces line up.
#pragma once

#include <cstddef>

namespace xmlt::base {

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

}  // namespace xmlt::base
