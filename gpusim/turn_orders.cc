// The turn orders of a block's simulated threads; see turn_orders.h.
#include "gpusim/turn_orders.h"

#include <cstddef>
#include <utility>

namespace gpusim {

unsigned TurnOrder(unsigned turn, unsigned threads, unsigned block_linear) {
  const unsigned step = block_linear % 2 == 0 ? turn : threads - 1 - turn;
  return (threads / 2 + step) % threads;
}

// The default order shuffled (Fisher-Yates) by a generator seeded with the seed and the block.
void SeededTurnOrder(uint64_t seed, unsigned block_linear, std::vector<unsigned>* order) {
  uint64_t state = seed ^ (uint64_t(block_linear) * 0x9E3779B97F4A7C15ull);
  const auto next = [&state] {  // splitmix64
    uint64_t z = (state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  };
  for (size_t i = order->size(); i > 1; --i) std::swap((*order)[i - 1], (*order)[next() % i]);
}

namespace detail {

uint64_t KernelOrderSeed(uint64_t seed, const char* kernel) {
  uint64_t h = 1469598103934665603ull;  // FNV-1a of the kernel's name: each kernel its own orders
  for (const char* c = kernel; *c != '\0'; ++c) h = (h ^ uint64_t(static_cast<unsigned char>(*c))) * 1099511628211ull;
  return seed ^ h;
}

}  // namespace detail
}  // namespace gpusim
