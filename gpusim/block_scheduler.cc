// Fibers of Boost.Context (a stack switch without a system call, unlike ucontext) for the
// simulated CUDA threads; see block_scheduler.h. The calls device code makes into a block are in
// kernel_builtins.cc, the fibers' stacks in fiber_stacks.cc, the turn orders in turn_orders.cc.
#include "gpusim/block_scheduler.h"

#include <boost/context/fiber.hpp>

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "gpusim/access_checks.h"
#include "gpusim/block_state.h"
#include "gpusim/check_options.h"
#include "gpusim/code_locations.h"
#include "gpusim/fault_in_kernel.h"
#include "gpusim/fiber_stacks.h"
#include "gpusim/turn_orders.h"

namespace gpusim {

namespace ctx = boost::context;

namespace detail {

thread_local Block* current_block = nullptr;

SimThread& Me(const char* what) { return static_cast<SimThread&>(detail::Current(what)); }

// Back to the scheduler until released.
void Suspend(SimThread& me, Wait wait) {
  Block& block = *current_block;
  me.wait = wait;
  block.running = &me;
  block.idle = false;
  void* fake_stack = nullptr;
  StartSwitch(&fake_stack, block.scheduler_stack);
  try {
    block.scheduler = std::move(block.scheduler).resume();
  } catch (const ctx::detail::forced_unwind&) {
    FinishSwitch(fake_stack, nullptr);  // destroyed while waiting: unwound on this stack
    throw;
  }
  FinishSwitch(fake_stack, nullptr);
  detail::current_thread = &me;
  if (!block.error.empty()) throw KernelFault{};
}

void Fail(const std::string& what) {
  Block& block = *current_block;
  if (block.error.empty()) block.error = what;
  throw KernelFault{};
}

std::string Where(const SimThread& t) {
  return "block (" + std::to_string(t.block_idx.x) + "," + std::to_string(t.block_idx.y) + "," +
         std::to_string(t.block_idx.z) + ") thread " + std::to_string(t.linear);
}

}  // namespace detail

namespace {

using detail::Block;
using detail::current_block;
using detail::FinishSwitch;
using detail::kWarp;
using detail::KernelFault;
using detail::last_allocated_stack;
using detail::Me;
using detail::PooledStack;
using detail::SimThread;
using detail::StackBounds;
using detail::StartSwitch;
using detail::Wait;
using detail::Where;

// Stops the running thread for good after an access check failed inside its device code. The
// check is called from instrumented loads and stores, which the compiler takes for calls that
// cannot throw, so the thread is not unwound: its fiber is left as it is (a stack's worth of
// memory, once per failed launch).
[[noreturn]] void Park(const std::string& what) {
  SimThread& me = Me("an access check");
  Block& block = *current_block;
  if (block.error.empty()) block.error = what;
  me.wait = Wait::kFaulted;
  block.running = &me;
  block.idle = false;
  void* fake_stack = nullptr;
  StartSwitch(&fake_stack, block.scheduler_stack);
  block.scheduler = std::move(block.scheduler).resume();
  std::fprintf(stderr, "gpusim: a thread stopped by an access check was resumed\n");
  std::abort();
}

// The thread of the pass's next turn, taken, if it has not started.
SimThread* TakeUnstarted(Block& block) {
  if (block.turn >= block.order.size() || !block.error.empty()) return nullptr;
  SimThread& t = block.threads[block.order[block.turn]];
  if (t.started) return nullptr;
  t.started = true;
  ++block.turn;
  return &t;
}

ctx::fiber Worker(ctx::fiber&& scheduler) {
  Block& block = *current_block;
  FinishSwitch(nullptr, &block.scheduler_stack);
  const StackBounds mine = block.next_worker_stack;
  block.scheduler = std::move(scheduler);
  for (;;) {
    for (SimThread* t = block.running; t != nullptr; t = block.running = TakeUnstarted(block)) {
      t->stack = mine;
      detail::current_thread = t;
      try {
        (*block.body)();
      } catch (const ctx::detail::forced_unwind&) {
        StartSwitch(nullptr, block.scheduler_stack);  // destroyed while waiting: this fiber ends
        throw;
      } catch (const KernelFault&) {
      }
      t->wait = Wait::kDone;
    }
    detail::current_thread = nullptr;
    block.idle = true;
    block.next_worker_stack = mine;
    void* fake_stack = nullptr;
    StartSwitch(&fake_stack, block.scheduler_stack);
    block.scheduler = std::move(block.scheduler).resume();
    FinishSwitch(fake_stack, nullptr);
    if (block.quitting) {
      StartSwitch(nullptr, block.scheduler_stack);  // this fiber ends
      return std::move(block.scheduler);
    }
  }
}

// Releases the lanes of a warp waiting at an exchange once every lane they name has arrived.
// Returns whether it released any; records an error if a named lane has exited or does not exist.
bool ReleaseWarp(Block& block, unsigned warp) {
  const unsigned first = warp * kWarp;
  const unsigned last = std::min<unsigned>(first + kWarp, unsigned(block.threads.size()));
  unsigned wanted = 0, arrived = 0;
  for (unsigned l = first; l < last; ++l) {
    const SimThread& t = block.threads[l];
    if (t.wait == Wait::kWarp) {
      wanted |= t.warp_mask;
      arrived |= 1u << (l - first);
    }
  }
  if (arrived == 0 || (wanted & ~arrived) != 0) {
    for (unsigned lane = 0; lane < kWarp; ++lane) {
      if (!(wanted >> lane & 1u) || (arrived >> lane & 1u)) continue;
      if (first + lane >= last || block.threads[first + lane].wait == Wait::kDone)
        block.error = "a warp exchange in " + Where(block.threads[first]) + "'s warp names lane " +
                      std::to_string(lane) + ", which " +
                      (first + lane >= last ? "does not exist" : "has exited");
    }
    return false;
  }
  bool all_syncwarp = true;
  for (unsigned l = first; l < last; ++l) {
    SimThread& t = block.threads[l];
    if (t.wait != Wait::kWarp) continue;
    all_syncwarp &= t.at_syncwarp;
    t.wait = Wait::kNone;
    t.at_syncwarp = false;
  }
  if (all_syncwarp && block.checks) detail::WarpSynced(warp);
  return true;
}

// One pass: every thread that may run runs to its next synchronization point, in turn order.
// Returns whether any ran.
bool RunPass(Block& block) {
  bool ran = false;
  for (block.turn = 0; block.turn < block.order.size() && block.error.empty();) {
    SimThread& t = block.threads[block.order[block.turn++]];
    if (t.wait != Wait::kNone) continue;
    ctx::fiber next;
    StackBounds target = t.stack;
    if (!t.started) {
      t.started = true;
      if (block.idle_workers.empty()) {
        next = ctx::fiber(std::allocator_arg, PooledStack(), Worker);
        target = last_allocated_stack;
      } else {
        next = std::move(block.idle_workers.back().first);
        target = block.idle_workers.back().second;
        block.idle_workers.pop_back();
      }
      block.next_worker_stack = target;
    }
    block.running = &t;
    block.idle = false;
    ran = true;
    if (t.fiber) next = std::move(t.fiber);
    void* fake_stack = nullptr;
    StartSwitch(&fake_stack, target);
    next = std::move(next).resume();
    FinishSwitch(fake_stack, nullptr);
    detail::current_thread = nullptr;
    if (block.idle) {
      block.idle_workers.emplace_back(std::move(next), block.next_worker_stack);
    } else {
      block.running->fiber = std::move(next);
    }
  }
  return ran;
}

std::string BarrierSite(const SimThread& t) {
  return detail::SourcePath(t.barrier_file != nullptr ? t.barrier_file : "?") + ":" + std::to_string(t.barrier_line);
}

// Synccheck, when no thread of the block can run and every one waits at a __syncthreads or has
// exited: they must all wait at the same one. A card would hang, or release a divergent barrier
// with undefined results; here either is a failed launch.
std::string SyncCheck(const Block& block) {
  const SimThread* waiting = nullptr;
  const SimThread* exited = nullptr;
  for (const SimThread& t : block.threads) {
    if (t.wait == Wait::kDone) {
      if (exited == nullptr) exited = &t;
      continue;
    }
    if (waiting == nullptr) {
      waiting = &t;
    } else if (t.barrier_line != waiting->barrier_line || std::strcmp(t.barrier_file, waiting->barrier_file) != 0) {
      return "synccheck: divergent __syncthreads: " + Where(*waiting) + " waits at " + BarrierSite(*waiting) +
             ", " + Where(t) + " at " + BarrierSite(t);
    }
  }
  if (waiting != nullptr && exited != nullptr)
    return "synccheck: __syncthreads at " + BarrierSite(*waiting) + " is not reached by every thread: " +
           Where(*waiting) + " waits there, " + Where(*exited) + " has exited";
  return {};
}

std::string RunBlock(Block& block, const dim3& grid, const dim3& dims, const uint3& index,
                     unsigned block_linear) {
  const unsigned count = dims.x * dims.y * dims.z;
  block.error.clear();
  if (block.threads.size() != count) block.threads.resize(count);
  for (auto& warp : block.exchange) warp = {};
  // Shared memory starts as garbage on a card: all ones (NaN floats, huge indices) here.
  std::fill(block.dynamic_shared.begin(), block.dynamic_shared.end(), 0xff);
  block.order.resize(count);
  for (unsigned l = 0; l < count; ++l) {
    SimThread& t = block.threads[l];
    t.thread_idx = {l % dims.x, (l / dims.x) % dims.y, l / (dims.x * dims.y)};
    t.block_idx = index;
    t.block_dim = dims;
    t.grid_dim = grid;
    t.linear = l;
    t.wait = Wait::kNone;
    t.started = false;
    t.warp_mask = 0;
    t.exchanges = 0;
    t.at_syncwarp = false;
    t.barrier_file = nullptr;
    block.order[l] = TurnOrder(l, count, block_linear);
  }
  if (block.seeded) SeededTurnOrder(block.order_seed, block_linear, &block.order);
  if (block.checks) detail::BeginBlockChecks();

  for (;;) {
    const bool ran = RunPass(block);
    if (!block.error.empty()) break;
    unsigned live = 0;
    for (const SimThread& t : block.threads) live += t.wait != Wait::kDone;
    if (live == 0) break;
    bool released = false;
    for (unsigned w = 0; w < block.exchange.size(); ++w) released |= ReleaseWarp(block, w);
    if (!block.error.empty()) break;
    if (!released) {
      bool all_at_barrier = true;
      for (const SimThread& t : block.threads)
        all_at_barrier &= t.wait == Wait::kBarrier || t.wait == Wait::kDone;
      if (all_at_barrier) {
        block.error = SyncCheck(block);
        if (!block.error.empty()) break;
        for (SimThread& t : block.threads)
          if (t.wait == Wait::kBarrier) t.wait = Wait::kNone;
        if (block.checks) detail::BlockBarrierPassed();
        released = true;
      }
    }
    if (!ran && !released) {
      for (const SimThread& t : block.threads)
        if (t.wait == Wait::kBarrier) {
          block.error = "deadlock: " + Where(t) +
                        " waits at __syncthreads while other threads of its block wait in a warp exchange";
          break;
        }
      if (block.error.empty()) block.error = "deadlock in block of " + Where(block.threads[0]);
      break;
    }
  }
  // Threads still waiting after an error are unwound when their fibers are destroyed; one stopped
  // by an access check is left as it is (Park).
  for (SimThread& t : block.threads) {
    if (t.fiber && t.wait == Wait::kFaulted) {
      new ctx::fiber(std::move(t.fiber));  // never resumed nor destroyed
    } else if (t.fiber) {
      detail::current_thread = &t;
      void* fake_stack = nullptr;
      StartSwitch(&fake_stack, t.stack);
      t.fiber = ctx::fiber();
      FinishSwitch(fake_stack, nullptr);
      detail::current_thread = nullptr;
    }
  }
  return block.error;
}

}  // namespace

namespace detail {

void FaultInKernel(const std::string& what) { Park(what); }

}  // namespace detail

std::string RunGrid(const char* kernel, dim3 grid, dim3 block_dims, size_t dynamic_shared_bytes,
                    const std::function<void()>& thread_body) {
  Block block;
  block.body = &thread_body;
  if (const std::optional<uint64_t> seed = TurnOrderSeed()) {
    block.seeded = true;
    block.order_seed = detail::KernelOrderSeed(*seed, kernel);
  }
  // Exactly the bytes asked for: ASan sees an access past the end of dynamic shared memory.
  block.dynamic_shared.resize(dynamic_shared_bytes);
  const unsigned threads = block_dims.x * block_dims.y * block_dims.z;
  block.exchange.resize((threads + kWarp - 1) / kWarp);
  block.checks = AccessChecksOn();
  if (block.checks) detail::BeginGridChecks(block.dynamic_shared.data(), dynamic_shared_bytes, threads);
  Block* outer = current_block;
  current_block = &block;
  std::string error;
  unsigned linear = 0;
  for (unsigned z = 0; z < grid.z && error.empty(); ++z)
    for (unsigned y = 0; y < grid.y && error.empty(); ++y)
      for (unsigned x = 0; x < grid.x && error.empty(); ++x, ++linear)
        error = RunBlock(block, grid, block_dims, {x, y, z}, linear);
  block.quitting = true;
  for (auto& [worker, stack] : block.idle_workers) {
    void* fake_stack = nullptr;
    StartSwitch(&fake_stack, stack);
    worker = std::move(worker).resume();
    FinishSwitch(fake_stack, nullptr);
  }
  block.idle_workers.clear();
  if (block.checks) detail::EndGridChecks();
  current_block = outer;
  return error;
}

}  // namespace gpusim
