// Device code on the host (XMLT_CUDA=SIM): the CUDA keywords, the thread and block builtins,
// __syncthreads, warp exchanges and atomics. Each simulated CUDA thread runs as its own fiber
// (gpusim/block_scheduler.cc); the builtins read the fiber's own indices, and every
// synchronization point hands control back to the block's scheduler (kernel_builtins.cc).
#pragma once

#include <cstdint>
#include <cstring>
#include <type_traits>

#include "gpusim/thread_view.h"
#include "gpusim/vector_types.h"

// Device-only and launch qualifiers mean nothing to the host compiler.
#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __launch_bounds__(...)
// Static block-shared memory: one instance per host thread. A block's fibers all run on the host
// thread that runs the block, and blocks of one host thread run one after another, so each block
// sees its own copy while it runs, as on a card.
#define __shared__ static thread_local

namespace gpusim::detail {

// The thread running on this host thread right now; null outside kernels. __thread rather than
// thread_local: without a dynamic initializer to guard against, the access checks read it on every
// load and store of device code without a call.
extern __thread ThreadView* current_thread;

[[noreturn]] void OutsideKernel(const char* what);

// Not inline: kernel code must read the variable afresh after every switch between fibers, and an
// inlined thread-local read may be kept across one.
ThreadView& Current(const char* what);

// `file` and `line` name the barrier for synccheck.
void SyncThreads(const char* file, int line);
void SyncWarp(unsigned mask);
// Deposits `value` for the warp, waits until every lane in `mask` has deposited, and returns the
// value of `source_lane`.
uint64_t WarpExchange(unsigned mask, uint64_t value, unsigned source_lane);
void* DynamicSharedMemory();

template <class T>
T Exchange(unsigned mask, T value, unsigned source_lane) {
  static_assert(sizeof(T) <= sizeof(uint64_t) && std::is_trivially_copyable_v<T>,
                "warp exchanges move at most 8 bytes");
  uint64_t bits = 0;
  std::memcpy(&bits, &value, sizeof(T));
  bits = WarpExchange(mask, bits, source_lane);
  T out;
  std::memcpy(&out, &bits, sizeof(T));
  return out;
}

inline unsigned LaneId() { return Current("a warp exchange").linear % 32; }

// A read-modify-write that other host threads (kernels of other streams) cannot tear.
template <class T, class F>
T AtomicUpdate(T* address, F update) {
  T old;
  __atomic_load(address, &old, __ATOMIC_RELAXED);
  T desired;
  do {
    desired = update(old);
  } while (!__atomic_compare_exchange(address, &old, &desired, false, __ATOMIC_SEQ_CST, __ATOMIC_RELAXED));
  return old;
}

}  // namespace gpusim::detail

#define threadIdx (::gpusim::detail::Current("threadIdx").thread_idx)
#define blockIdx (::gpusim::detail::Current("blockIdx").block_idx)
#define blockDim (::gpusim::detail::Current("blockDim").block_dim)
#define gridDim (::gpusim::detail::Current("gridDim").grid_dim)
constexpr int warpSize = 32;

// A macro, so that synccheck can tell one barrier from another without line tables.
#define __syncthreads() ::gpusim::detail::SyncThreads(__FILE__, __LINE__)
inline void __syncwarp(unsigned mask = 0xffffffffu) { ::gpusim::detail::SyncWarp(mask); }
inline void __threadfence() { __atomic_thread_fence(__ATOMIC_SEQ_CST); }

template <class T>
T __shfl_sync(unsigned mask, T value, int source_lane, int width = warpSize) {
  const unsigned lane = ::gpusim::detail::LaneId();
  const unsigned base = lane & ~unsigned(width - 1);
  return ::gpusim::detail::Exchange(mask, value, base + (unsigned(source_lane) % unsigned(width)));
}

template <class T>
T __shfl_xor_sync(unsigned mask, T value, int lane_mask, int width = warpSize) {
  const unsigned lane = ::gpusim::detail::LaneId();
  unsigned source = lane ^ unsigned(lane_mask);
  // A lane beyond the caller's group of `width` lanes reads its own value, as on a card.
  if ((source & ~unsigned(width - 1)) != (lane & ~unsigned(width - 1))) source = lane;
  return ::gpusim::detail::Exchange(mask, value, source);
}

template <class T>
T __shfl_down_sync(unsigned mask, T value, unsigned delta, int width = warpSize) {
  const unsigned lane = ::gpusim::detail::LaneId();
  const unsigned source = lane + delta;
  const bool inside = (source & ~unsigned(width - 1)) == (lane & ~unsigned(width - 1));
  return ::gpusim::detail::Exchange(mask, value, inside ? source : lane);
}

template <class T>
T __shfl_up_sync(unsigned mask, T value, unsigned delta, int width = warpSize) {
  const unsigned lane = ::gpusim::detail::LaneId();
  const bool inside = (lane % unsigned(width)) >= delta;
  return ::gpusim::detail::Exchange(mask, value, inside ? lane - delta : lane);
}

// The bits of a float and back, as the CUDA intrinsics reinterpret them.
inline unsigned __float_as_uint(float value) {
  unsigned bits;
  std::memcpy(&bits, &value, sizeof bits);
  return bits;
}
inline float __uint_as_float(unsigned bits) {
  float value;
  std::memcpy(&value, &bits, sizeof value);
  return value;
}

template <class T>
T atomicAdd(T* address, T value) {
  return ::gpusim::detail::AtomicUpdate(address, [value](T old) { return T(old + value); });
}
template <class T>
T atomicSub(T* address, T value) {
  return ::gpusim::detail::AtomicUpdate(address, [value](T old) { return T(old - value); });
}
template <class T>
T atomicMax(T* address, T value) {
  return ::gpusim::detail::AtomicUpdate(address, [value](T old) { return old < value ? value : old; });
}
template <class T>
T atomicMin(T* address, T value) {
  return ::gpusim::detail::AtomicUpdate(address, [value](T old) { return value < old ? value : old; });
}
template <class T>
T atomicExch(T* address, T value) {
  return ::gpusim::detail::AtomicUpdate(address, [value](T) { return value; });
}
template <class T>
T atomicCAS(T* address, T compare, T value) {
  return ::gpusim::detail::AtomicUpdate(address, [compare, value](T old) { return old == compare ? value : old; });
}
