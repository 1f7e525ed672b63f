// bf16 values widened and rounded a piece at a time; see bf16_pieces.h.
#include "engine/bf16_pieces.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include "kernels/cpu/bf16_gemm.h"
#include "kernels/cpu/stochastic_rounding.h"

namespace xmlt::engine {

void StreamWidenedBf16(const uint16_t* bits, size_t count,
                       const std::function<void(const float* values, size_t count)>& sink) {
  std::vector<float> piece(std::min(kBf16Piece, count));
  for (size_t at = 0; at < count; at += kBf16Piece) {
    const size_t n = std::min(kBf16Piece, count - at);
    for (size_t i = 0; i < n; ++i) piece[i] = kernels::cpu::WidenBf16(bits[at + i]);
    sink(piece.data(), n);
  }
}

void RoundToNearestBf16(const void* values, size_t count, uint16_t* out) {
  std::vector<float> piece(std::min(kBf16Piece, count));
  const auto* bytes = static_cast<const unsigned char*>(values);
  for (size_t at = 0; at < count; at += kBf16Piece) {
    const size_t n = std::min(kBf16Piece, count - at);
    std::memcpy(piece.data(), bytes + at * sizeof(float), n * sizeof(float));
    for (size_t i = 0; i < n; ++i) out[at + i] = kernels::cpu::FloatToBf16(piece[i]);
  }
}

}  // namespace xmlt::engine
