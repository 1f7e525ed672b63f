// Runs a kernel's grid on the calling host thread: block after block, each CUDA thread its own
// fiber. Within a block the threads take turns, each running to its next synchronization point
// (__syncthreads, a warp exchange, or its end) before the next one starts, in an order that
// differs between neighbouring blocks, so that a missing barrier changes the result on every
// run instead of only under some timing.
#pragma once

#include <cstddef>
#include <functional>
#include <string>

#include "gpusim/kernel_builtins.h"

namespace gpusim {

// The order of turns within block `block_linear` of `threads` threads: starting from the middle
// thread upward and wrapping around, reversed in odd blocks. Every ordered pair of threads runs
// one way round in a block and the other way round in the next; and in a single-block kernel
// thread 0 neither goes first nor last, so both "thread 0 writes, all read" and "all write,
// thread 0 reads" fail without their barrier.
unsigned TurnOrder(unsigned turn, unsigned threads, unsigned block_linear);

// Runs every block of the grid; `thread_body` is the kernel with its arguments bound. Returns an
// empty string, or what went wrong inside the kernel (a deadlock at a barrier, a warp exchange
// with a lane that has exited), which a card would show as a hang or undefined behaviour.
std::string RunGrid(dim3 grid, dim3 block, size_t dynamic_shared_bytes,
                    const std::function<void()>& thread_body);

}  // namespace gpusim
