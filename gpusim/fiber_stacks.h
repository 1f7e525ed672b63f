// The stacks of the fibers that run simulated CUDA threads (block_scheduler.cc), pooled across
// blocks and launches, and the announcements of every switch between stacks that ASan needs.
#pragma once

#include <boost/context/stack_context.hpp>
#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/asan_interface.h>
#endif

#include <cstddef>
#include <cstdlib>
#include <vector>

namespace gpusim::detail {

// Where a fiber's stack lies. Under ASan every switch between stacks is announced to it
// (__sanitizer_start/finish_switch_fiber): an exception thrown on a fiber's stack would otherwise
// be unwound against the wrong stack's bounds. Elsewhere these cost nothing.
struct StackBounds {
  const void* bottom = nullptr;
  size_t size = 0;
};

extern thread_local StackBounds last_allocated_stack;  // by PooledStack, read right after a fiber is made

inline void StartSwitch(void** fake_stack, const StackBounds& to) {
#if defined(__SANITIZE_ADDRESS__)
  __sanitizer_start_switch_fiber(fake_stack, to.bottom, to.size);
#endif
}

inline void FinishSwitch(void* fake_stack, StackBounds* from) {
#if defined(__SANITIZE_ADDRESS__)
  __sanitizer_finish_switch_fiber(fake_stack, from != nullptr ? &from->bottom : nullptr,
                                  from != nullptr ? &from->size : nullptr);
#endif
}

// Fiber stacks are reused across blocks and launches: a grid may run millions of threads.
class PooledStack {
 public:
  boost::context::stack_context allocate();
  void deallocate(boost::context::stack_context& stack) noexcept;

 private:
  struct Stacks {
    std::vector<void*> free;
    ~Stacks() {
      for (void* p : free) std::free(p);
    }
  };
  static std::vector<void*>& Pool();
};

}  // namespace gpusim::detail
