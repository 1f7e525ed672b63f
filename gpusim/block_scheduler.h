// Runs a kernel's grid on the calling host thread: block after block, each CUDA thread its own
// fiber. Within a block the threads take turns, each running to its next synchronization point
// (__syncthreads, a warp exchange, or its end) before the next one starts, in an order that
// differs between neighbouring blocks, or (XMLT_SIM_ORDER=SEED, check_options.h) in a seeded
// shuffle of it (turn_orders.h). A missing barrier is caught by racecheck (access_checks.h)
// whatever the order; the order still decides which wrong value a kernel computes when the checks
// are off.
// Synccheck is here: a __syncthreads that not every thread of the block reaches fails the launch.
#pragma once

#include <cstddef>
#include <functional>
#include <string>

#include "gpusim/kernel_builtins.h"

namespace gpusim {

// Runs every block of the grid; `thread_body` is the kernel with its arguments bound. Returns an
// empty string, or what went wrong inside the kernel (a deadlock at a barrier, a warp exchange
// with a lane that has exited, a failed synccheck, racecheck or initcheck), which a card would
// show as a hang, undefined behaviour or a sanitizer's report. `kernel` names the kernel; with
// XMLT_SIM_ORDER it also picks the kernel's orders, so that two kernels differ.
std::string RunGrid(const char* kernel, dim3 grid, dim3 block, size_t dynamic_shared_bytes,
                    const std::function<void()>& thread_body);

}  // namespace gpusim
