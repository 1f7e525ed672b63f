// Initcheck's record of a device allocation: a bit per byte, set once the byte has been written by
// a kernel, a copy, a memset or a library call, and before the bits the count of bytes not yet
// written, so that an allocation written whole (most of them, soon) costs an access one test of a
// word that stays in cache. Kernels of several streams (host threads) may mark one allocation at
// once, so bits are set with atomic ORs, and only when not set already.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>

namespace gpusim::detail {

inline uint64_t BitsBetween(size_t from, size_t to) {  // bits [from, to) of one word, to <= 64
  const uint64_t high = to == 64 ? ~uint64_t{0} : (uint64_t{1} << to) - 1;
  return high & ~((uint64_t{1} << from) - 1);
}

// The bits of a `bytes`-byte allocation, none written.
inline uint64_t* NewWrittenBits(size_t bytes) {
  uint64_t* words = new uint64_t[1 + (bytes + 63) / 64]();
  words[0] = bytes;
  return words + 1;
}
inline void DeleteWrittenBits(uint64_t* bits) {
  if (bits != nullptr) delete[] (bits - 1);
}
inline bool AllWritten(const uint64_t* bits) { return __atomic_load_n(bits - 1, __ATOMIC_RELAXED) == 0; }

// Marks bytes [from, to) of the allocation.
inline void MarkWritten(uint64_t* bits, size_t from, size_t to) {
  while (from < to) {
    const size_t word = from / 64, end = std::min<size_t>(to, (word + 1) * 64);
    const uint64_t mask = BitsBetween(from % 64, end - word * 64);
    if ((__atomic_load_n(&bits[word], __ATOMIC_RELAXED) & mask) != mask) {
      const uint64_t before = __atomic_fetch_or(&bits[word], mask, __ATOMIC_RELAXED);
      __atomic_fetch_sub(bits - 1, uint64_t(__builtin_popcountll(mask & ~before)), __ATOMIC_RELAXED);
    }
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
