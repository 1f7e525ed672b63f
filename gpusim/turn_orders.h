// The order in which a block's simulated threads take turns (block_scheduler.h): a default one
// that differs between neighbouring blocks, or (XMLT_SIM_ORDER=SEED, check_options.h) a seeded
// shuffle of it.
#pragma once

#include <cstdint>
#include <vector>

namespace gpusim {

// The order of turns within block `block_linear` of `threads` threads: starting from the middle
// thread upward and wrapping around, reversed in odd blocks. Every ordered pair of threads runs
// one way round in a block and the other way round in the next; and in a single-block kernel
// thread 0 neither goes first nor last, so both "thread 0 writes, all read" and "all write,
// thread 0 reads" fail without their barrier.
unsigned TurnOrder(unsigned turn, unsigned threads, unsigned block_linear);

// With a seed, block `block_linear`'s order is the default one shuffled by a generator seeded
// with `seed` and the block: the same seed gives the same orders on every run.
void SeededTurnOrder(uint64_t seed, unsigned block_linear, std::vector<unsigned>* order);

namespace detail {

// The seed of kernel `kernel`'s orders under XMLT_SIM_ORDER's `seed`.
uint64_t KernelOrderSeed(uint64_t seed, const char* kernel);

}  // namespace detail
}  // namespace gpusim
