// The entry points of the compiler's thread-sanitizer instrumentation, implemented by the
// simulator instead of the TSan runtime: device code (kernels/cuda/*.cu, merge/gpu/*.cu and the
// simulator's own test kernels) is compiled with -fsanitize=thread but linked without that runtime,
// so that every load, store and atomic it makes reaches the access checks (access_checks.h).
// Outside a grid run each hook is one thread-local test. Host code of the same files goes through
// them too, and is not checked.
//
// Only in a build without a sanitizer of its own (the CMake option XMLT_SANITIZE): ASan's and
// TSan's instrumentation cannot be combined with this one, and TSan's runtime defines these names.
#if defined(XMLT_GPUSIM_ACCESS_CHECKS)

#include <cstddef>
#include <cstdint>

#include "gpusim/access_checks.h"

namespace {

using gpusim::detail::AccessKind;

inline void Note(const void* address, size_t bytes, AccessKind kind, const void* pc) {
  if (__builtin_expect(gpusim::detail::access_checks_active, false))
    gpusim::detail::CheckAccess(address, bytes, kind, pc);
}

}  // namespace

#define XMLT_PC __builtin_return_address(0)

extern "C" {

void __tsan_init() {}
void __tsan_func_entry(void*) {}
void __tsan_func_exit() {}
void __tsan_vptr_update(void**, void*) {}
void __tsan_vptr_read(void**) {}

#define XMLT_PLAIN_HOOKS(N)                                                                              \
  void __tsan_read##N(void* a) { Note(a, N, AccessKind::kRead, XMLT_PC); }                               \
  void __tsan_write##N(void* a) { Note(a, N, AccessKind::kWrite, XMLT_PC); }                             \
  void __tsan_unaligned_read##N(void* a) { Note(a, N, AccessKind::kRead, XMLT_PC); }                     \
  void __tsan_unaligned_write##N(void* a) { Note(a, N, AccessKind::kWrite, XMLT_PC); }                   \
  void __tsan_volatile_read##N(void* a) { Note(a, N, AccessKind::kRead, XMLT_PC); }                      \
  void __tsan_volatile_write##N(void* a) { Note(a, N, AccessKind::kWrite, XMLT_PC); }                    \
  void __tsan_unaligned_volatile_read##N(void* a) { Note(a, N, AccessKind::kRead, XMLT_PC); }            \
  void __tsan_unaligned_volatile_write##N(void* a) { Note(a, N, AccessKind::kWrite, XMLT_PC); }
XMLT_PLAIN_HOOKS(1)
XMLT_PLAIN_HOOKS(2)
XMLT_PLAIN_HOOKS(4)
XMLT_PLAIN_HOOKS(8)
XMLT_PLAIN_HOOKS(16)

void __tsan_read_range(void* a, unsigned long size) { Note(a, size, AccessKind::kRead, XMLT_PC); }
void __tsan_write_range(void* a, unsigned long size) { Note(a, size, AccessKind::kWrite, XMLT_PC); }

// Atomics: the operation itself (always sequentially consistent: stronger than asked, never
// weaker), reported as an atomic access, which initcheck sees as a read and a write and
// racecheck ignores.
#define XMLT_ATOMIC_HOOKS(N, T)                                                                          \
  T __tsan_atomic##N##_load(const volatile T* a, int) {                                                  \
    Note(const_cast<T*>(a), sizeof(T), AccessKind::kAtomicLoad, XMLT_PC);                                \
    return __atomic_load_n(a, __ATOMIC_SEQ_CST);                                                          \
  }                                                                                                      \
  void __tsan_atomic##N##_store(volatile T* a, T v, int) {                                               \
    Note(const_cast<T*>(a), sizeof(T), AccessKind::kAtomicStore, XMLT_PC);                               \
    __atomic_store_n(a, v, __ATOMIC_SEQ_CST);                                                             \
  }                                                                                                      \
  T __tsan_atomic##N##_exchange(volatile T* a, T v, int) {                                               \
    Note(const_cast<T*>(a), sizeof(T), AccessKind::kAtomic, XMLT_PC);                                    \
    return __atomic_exchange_n(a, v, __ATOMIC_SEQ_CST);                                                   \
  }                                                                                                      \
  T __tsan_atomic##N##_fetch_add(volatile T* a, T v, int) {                                              \
    Note(const_cast<T*>(a), sizeof(T), AccessKind::kAtomic, XMLT_PC);                                    \
    return __atomic_fetch_add(a, v, __ATOMIC_SEQ_CST);                                                    \
  }                                                                                                      \
  T __tsan_atomic##N##_fetch_sub(volatile T* a, T v, int) {                                              \
    Note(const_cast<T*>(a), sizeof(T), AccessKind::kAtomic, XMLT_PC);                                    \
    return __atomic_fetch_sub(a, v, __ATOMIC_SEQ_CST);                                                    \
  }                                                                                                      \
  T __tsan_atomic##N##_fetch_and(volatile T* a, T v, int) {                                              \
    Note(const_cast<T*>(a), sizeof(T), AccessKind::kAtomic, XMLT_PC);                                    \
    return __atomic_fetch_and(a, v, __ATOMIC_SEQ_CST);                                                    \
  }                                                                                                      \
  T __tsan_atomic##N##_fetch_or(volatile T* a, T v, int) {                                               \
    Note(const_cast<T*>(a), sizeof(T), AccessKind::kAtomic, XMLT_PC);                                    \
    return __atomic_fetch_or(a, v, __ATOMIC_SEQ_CST);                                                     \
  }                                                                                                      \
  T __tsan_atomic##N##_fetch_xor(volatile T* a, T v, int) {                                              \
    Note(const_cast<T*>(a), sizeof(T), AccessKind::kAtomic, XMLT_PC);                                    \
    return __atomic_fetch_xor(a, v, __ATOMIC_SEQ_CST);                                                    \
  }                                                                                                      \
  T __tsan_atomic##N##_fetch_nand(volatile T* a, T v, int) {                                             \
    Note(const_cast<T*>(a), sizeof(T), AccessKind::kAtomic, XMLT_PC);                                    \
    return __atomic_fetch_nand(a, v, __ATOMIC_SEQ_CST);                                                   \
  }                                                                                                      \
  int __tsan_atomic##N##_compare_exchange_strong(volatile T* a, T* expected, T v, int, int) {            \
    Note(const_cast<T*>(a), sizeof(T), AccessKind::kAtomic, XMLT_PC);                                    \
    return __atomic_compare_exchange_n(a, expected, v, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);        \
  }                                                                                                      \
  int __tsan_atomic##N##_compare_exchange_weak(volatile T* a, T* expected, T v, int, int) {              \
    Note(const_cast<T*>(a), sizeof(T), AccessKind::kAtomic, XMLT_PC);                                    \
    return __atomic_compare_exchange_n(a, expected, v, true, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);         \
  }                                                                                                      \
  T __tsan_atomic##N##_compare_exchange_val(volatile T* a, T expected, T v, int, int) {                  \
    Note(const_cast<T*>(a), sizeof(T), AccessKind::kAtomic, XMLT_PC);                                    \
    __atomic_compare_exchange_n(a, &expected, v, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);              \
    return expected;                                                                                     \
  }
XMLT_ATOMIC_HOOKS(8, uint8_t)
XMLT_ATOMIC_HOOKS(16, uint16_t)
XMLT_ATOMIC_HOOKS(32, uint32_t)
XMLT_ATOMIC_HOOKS(64, uint64_t)

void __tsan_atomic_thread_fence(int) { __atomic_thread_fence(__ATOMIC_SEQ_CST); }
void __tsan_atomic_signal_fence(int) { __atomic_signal_fence(__ATOMIC_SEQ_CST); }

}  // extern "C"

#endif  // XMLT_GPUSIM_ACCESS_CHECKS
