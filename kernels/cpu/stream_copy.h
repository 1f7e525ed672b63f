// Copies floats to memory that will not be read again soon with non-temporal stores: a plain copy
// into a cold destination first reads every line in (write-allocate), a third more memory traffic.
#pragma once

#include <algorithm>
#include <cstdint>

#if defined(__AVX512F__) || defined(__SSE2__)
#include <immintrin.h>
#endif

namespace xmlt::kernels::cpu {

inline void StreamCopy(const float* src, float* dst, uint64_t count) {
#if defined(__AVX512F__) || defined(__SSE2__)
#if defined(__AVX512F__)
  constexpr uint64_t kLanes = 16, kAlign = 64;
#else
  constexpr uint64_t kLanes = 4, kAlign = 16;
#endif
  uint64_t i = 0;
  // Plain stores up to the destination's first aligned address, streamed ones after.
  while (i < count && reinterpret_cast<uintptr_t>(dst + i) % kAlign != 0) dst[i] = src[i], ++i;
  for (; i + kLanes <= count; i += kLanes) {
#if defined(__AVX512F__)
    _mm512_stream_ps(dst + i, _mm512_loadu_ps(src + i));
#else
    _mm_stream_ps(dst + i, _mm_loadu_ps(src + i));
#endif
  }
  for (; i < count; ++i) dst[i] = src[i];
  // Streamed stores are weakly ordered: fence them before another thread may read the data.
  _mm_sfence();
#else
  std::copy(src, src + count, dst);
#endif
}

// Other element types (the double models of the gradient checks) take a plain copy.
template <class T>
void StreamCopy(const T* src, T* dst, uint64_t count) {
  std::copy(src, src + count, dst);
}

}  // namespace xmlt::kernels::cpu
