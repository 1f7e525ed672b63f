// The block a host thread is running, shared by the scheduler (block_scheduler.cc) and the calls
// device code makes into it (kernel_builtins.cc): its simulated threads, their fibers and what each
// waits for.
#pragma once

#include <boost/context/fiber.hpp>

#include <array>
#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "gpusim/fiber_stacks.h"
#include "gpusim/thread_view.h"

namespace gpusim::detail {

constexpr unsigned kWarp = 32;

// kFaulted: stopped inside device code by an access check; its fiber is never resumed.
enum class Wait { kNone, kBarrier, kWarp, kDone, kFaulted };

// Thrown inside a simulated thread to end it after a fault it caused.
struct KernelFault {};

// One simulated CUDA thread and where it stands.
struct SimThread : ThreadView {
  Wait wait = Wait::kNone;
  bool started = false;
  unsigned warp_mask = 0;
  unsigned exchanges = 0;              // warp exchanges so far: selects the exchange buffer
  bool at_syncwarp = false;            // waits in __syncwarp rather than in a shuffle
  const char* barrier_file = nullptr;  // where it waits at __syncthreads, for synccheck
  int barrier_line = 0;
  boost::context::fiber fiber;  // this thread while it waits
  StackBounds stack;            // of the worker fiber it runs on
};

// One block at a time; reused for every block of a grid.
struct Block {
  std::vector<SimThread> threads;
  std::vector<std::array<std::array<uint64_t, kWarp>, 2>> exchange;  // [warp][buffer][lane]
  std::vector<unsigned char> dynamic_shared;
  std::string error;
  const std::function<void()>* body = nullptr;
  bool checks = false;      // racecheck and initcheck
  uint64_t order_seed = 0;  // with seeded = true: XMLT_SIM_ORDER's seed, mixed with the kernel
  bool seeded = false;
  std::vector<unsigned> order;  // the turn order of this block
  unsigned turn = 0;            // the next turn of the current pass
  // Threads run on worker fibers. A worker whose thread ends takes the next turn's thread at once
  // if it has not started yet, without a stack switch, so a grid of threads that never wait costs
  // a switch per block rather than three per thread. A thread that waits keeps its worker.
  boost::context::fiber scheduler;  // the scheduler, while a worker runs
  SimThread* running = nullptr;     // the thread on the worker that ran last
  bool idle = false;                // the worker came back without a thread
  bool quitting = false;            // idle workers are told to end
  std::vector<std::pair<boost::context::fiber, StackBounds>> idle_workers;
  StackBounds scheduler_stack;    // learnt by the first worker to run
  StackBounds next_worker_stack;  // the stack of the worker about to start
};

// The block this host thread is running, or null.
extern thread_local Block* current_block;

// The running simulated thread; `what` names the caller outside a kernel.
SimThread& Me(const char* what);

// Back to the scheduler until released.
void Suspend(SimThread& me, Wait wait);

// Fails the running block with `what` and ends the calling simulated thread (throws KernelFault).
void Fail(const std::string& what);

// "block (x,y,z) thread t", for messages.
std::string Where(const SimThread& t);

}  // namespace gpusim::detail
