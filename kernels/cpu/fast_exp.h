// exp for float that compilers vectorize: glibc's expf is a scalar call in a loop, and the
// softmax over hundreds of thousands of labels spends most of its time there otherwise.
// Relative error below 2e-7 on [-87, 88]; results below exp(-87) flush to 0.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

namespace xmlt::kernels::cpu {

// Always inlined: vector_kernels_<isa>.cc compile it for their ISA, and an out-of-line copy from
// one of them must not become every caller's (cpu_isa.h).
[[gnu::always_inline]] inline float FastExp(float x) {
  // exp(x) = 2^n * exp(r) with n = round(x / ln2) and |r| <= ln2 / 2; exp(r) by a degree-6
  // polynomial (Taylor, whose truncation error at ln2/2 is below float precision).
  // A NaN (a diverging run) must come out as NaN, and must not reach the integer conversion.
  const bool nan = x != x;
  x = nan ? 0.0f : (x < -87.0f ? -87.0f : (x > 88.0f ? 88.0f : x));
  // Round to nearest (even) by adding and removing 1.5 * 2^23, which leaves no fraction bits;
  // the same result as std::nearbyint, but plain SSE2 vectorizes it (nearbyint needs SSE4.1 or a
  // call to libm).
  constexpr float kRound = 12582912.0f;
  const float n = (x * 1.44269504088896341f + kRound) - kRound;
  // ln2 split in two so that n * ln2 is subtracted without rounding error.
  const float r = (x - n * 0.693359375f) + n * 2.12194440e-4f;
  float p = 1.0f / 720.0f;
  p = p * r + 1.0f / 120.0f;
  p = p * r + 1.0f / 24.0f;
  p = p * r + 1.0f / 6.0f;
  p = p * r + 0.5f;
  p = p * r + 1.0f;
  p = p * r + 1.0f;
  const uint32_t bits = uint32_t(int32_t(n) + 127) << 23;  // n in [-126, 127]: a normal power of 2
  float scale;
  std::memcpy(&scale, &bits, sizeof(scale));
  return nan ? std::numeric_limits<float>::quiet_NaN() : p * scale;
}

inline double FastExp(double x) { return std::exp(x); }  // the double path is for tests: exact

}  // namespace xmlt::kernels::cpu
