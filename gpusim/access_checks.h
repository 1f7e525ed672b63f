// Racecheck and initcheck, as compute-sanitizer's, on every load and store that device code makes
// (the compiler's instrumentation calls gpusim/access_hooks.cc, which calls CheckAccess).
//
// Racecheck: for every word of shared memory (static and dynamic) and of device memory that a
// block touches, the last writer and the readers within the current barrier interval. A read
// after another thread's write, a write after another thread's write, and a write after another
// thread's read, with no __syncthreads between them, is a hazard; inside a warp a __syncwarp
// between them orders them too (a shuffle does not: it moves registers, not memory). Atomics are
// never hazards. Device memory is checked between the threads of one block only, since blocks
// run one after another here, and from the block's first __syncthreads on: before it, a kernel
// that is right has only words of its own, and element-wise kernels, which never synchronize
// their block, cost no racecheck at all. Accesses narrower than a word, or not aligned to one, are tracked
// per byte, so that neighbouring bytes of different threads are no hazard.
//
// Initcheck: a read of shared memory that no thread of the block has written since the block
// started, or of device memory that no kernel, copy, memset or library call has written since it
// was allocated (device_memory.h).
//
// A hazard or an uninitialized read fails the launch with the kernel, the block, both threads,
// the word's offset in its variable or allocation and the source lines (line tables permitting);
// the offending thread stops there, as a card's context is lost under the sanitizer.
#pragma once

#include <cstddef>
#include <cstdint>

#include "gpusim/kernel_builtins.h"

namespace gpusim::detail {

// Atomic: a read-modify-write; the atomic loads and stores are apart, since a store reads nothing.
enum class AccessKind { kRead, kWrite, kAtomic, kAtomicLoad, kAtomicStore };

// Set while this host thread runs a grid with the access checks on; the hooks test it first.
extern __thread bool access_checks_active;  // __thread: read without a call (current_thread's reason)

// Around a grid's run on this host thread.
void BeginGridChecks(const void* dynamic_shared, size_t dynamic_shared_bytes, unsigned threads);
void EndGridChecks();
// At each block's start: its shared memory is garbage again and every record is dropped.
void BeginBlockChecks();
// When a __syncthreads releases the block, and when a __syncwarp releases warp `warp`.
void BlockBarrierPassed();
void WarpSynced(unsigned warp);

// `pc`: the instruction after the access's call, for the report.
void CheckAccess(const void* address, size_t bytes, AccessKind kind, const void* pc);

}  // namespace gpusim::detail
