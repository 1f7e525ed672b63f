// Weights or optimizer state kept in bf16, read out and set as fp32 a piece at a time: checkpoints
// and model files hold fp32 values, and no copy of the whole vector in fp32 is ever made.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>

namespace xmlt::engine {

// Values widened or rounded at a time: 1 Mi (4 MiB of floats), the piece the memory plan counts.
constexpr size_t kBf16Piece = size_t(1) << 20;

// Hands `count` bf16 values to `sink` widened to fp32, in consecutive pieces of at most kBf16Piece.
void StreamWidenedBf16(const uint16_t* bits, size_t count,
                       const std::function<void(const float* values, size_t count)>& sink);

// out[i] = values[i] rounded to nearest (which keeps a value bf16 holds exactly), for `count`
// floats stored as bytes that need not be aligned (a checkpoint's mapping), read a piece at a time.
void RoundToNearestBf16(const void* values, size_t count, uint16_t* out);

}  // namespace xmlt::engine
