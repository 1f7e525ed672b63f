// Initcheck's record of a device allocation: a bit per byte, set once the byte has been written by
// a kernel, a copy, a memset or a library call. Kernels of several streams (host threads) may
// mark one allocation at once, so bits are set with atomic ORs, and only when not set already.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>

namespace gpusim::detail {

inline uint64_t BitsBetween(size_t from, size_t to) {  // bits [from, to) of one word, to <= 64
  const uint64_t high = to == 64 ? ~uint64_t{0} : (uint64_t{1} << to) - 1;
  return high & ~((uint64_t{1} << from) - 1);
}

// Marks bytes [from, to) of the allocation.
inline void MarkWritten(uint64_t* bits, size_t from, size_t to) {
  while (from < to) {
    const size_t word = from / 64, end = std::min<size_t>(to, (word + 1) * 64);
    const uint64_t mask = BitsBetween(from % 64, end - word * 64);
    if ((__atomic_load_n(&bits[word], __ATOMIC_RELAXED) & mask) != mask)
      __atomic_fetch_or(&bits[word], mask, __ATOMIC_RELAXED);
    from = end;
  }
}

// The first byte of [from, to) never written, or `to`.
inline size_t FirstUnwritten(const uint64_t* bits, size_t from, size_t to) {
  while (from < to) {
    const size_t word = from / 64, end = std::min<size_t>(to, (word + 1) * 64);
    const uint64_t mask = BitsBetween(from % 64, end - word * 64);
    const uint64_t missing = mask & ~__atomic_load_n(&bits[word], __ATOMIC_RELAXED);
    if (missing != 0) return word * 64 + size_t(__builtin_ctzll(missing));
    from = end;
  }
  return to;
}

}  // namespace gpusim::detail
