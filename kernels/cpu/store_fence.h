// Orders the non-temporal stores before it (vector_kernels.h, bias_exp_stream) ahead of any later
// store: streamed stores are weakly ordered, and another thread may read their data next.
#pragma once

#if defined(__SSE2__)
#include <immintrin.h>
#endif

namespace xmlt::kernels::cpu {

inline void StoreFence() {
#if defined(__SSE2__)
  _mm_sfence();
#endif
}

}  // namespace xmlt::kernels::cpu
