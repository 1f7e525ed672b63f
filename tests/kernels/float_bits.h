// A float's IEEE bits and back, for the tests of the bf16 conversions and roundings.
#pragma once

#include <cstdint>
#include <cstring>

namespace xmlt::testing {

inline uint32_t Bits(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, sizeof bits);
  return bits;
}

inline float FromBits(uint32_t bits) {
  float value;
  std::memcpy(&value, &bits, sizeof value);
  return value;
}

}  // namespace xmlt::testing
