// The calls device code makes into the block's scheduler (kernel_builtins.h): __syncthreads,
// __syncwarp, warp exchanges and dynamic shared memory, each run on the simulated thread's fiber.
#include "gpusim/kernel_builtins.h"

#include <cstdio>
#include <cstdlib>
#include <string>

#include "gpusim/block_state.h"

namespace gpusim::detail {

__thread ThreadView* current_thread = nullptr;

void OutsideKernel(const char* what) {
  std::fprintf(stderr, "gpusim: %s used outside a kernel\n", what);
  std::abort();
}

ThreadView& Current(const char* what) {
  ThreadView* thread = current_thread;
  if (thread == nullptr) OutsideKernel(what);
  return *thread;
}

void SyncThreads(const char* file, int line) {
  SimThread& me = Me("__syncthreads");
  me.barrier_file = file;
  me.barrier_line = line;
  Suspend(me, Wait::kBarrier);
}

void SyncWarp(unsigned mask) {
  SimThread& me = Me("__syncwarp");
  me.warp_mask = mask;
  me.at_syncwarp = true;
  ++me.exchanges;
  Suspend(me, Wait::kWarp);
}

uint64_t WarpExchange(unsigned mask, uint64_t value, unsigned source_lane) {
  SimThread& me = Me("a warp exchange");
  const unsigned lane = me.linear % kWarp, warp = me.linear / kWarp;
  if (!(mask >> lane & 1u)) Fail(Where(me) + " takes part in a warp exchange whose mask leaves it out");
  if (source_lane >= kWarp || !(mask >> source_lane & 1u))
    Fail(Where(me) + " reads lane " + std::to_string(source_lane) + " outside the exchange's mask");
  // Two buffers: a lane may deposit its next value before a slower lane has read this one, but
  // never two ahead, since the next exchange waits for every lane.
  auto& buffer = current_block->exchange[warp][me.exchanges++ % 2];
  buffer[lane] = value;
  me.warp_mask = mask;
  Suspend(me, Wait::kWarp);
  return buffer[source_lane];
}

void* DynamicSharedMemory() {
  Me("extern __shared__ memory");
  return current_block->dynamic_shared.data();
}

}  // namespace gpusim::detail
