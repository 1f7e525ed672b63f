// Fiber stacks for the simulated CUDA threads; see fiber_stacks.h.
#include "gpusim/fiber_stacks.h"

#include <cstdlib>
#include <new>
#include <vector>

namespace gpusim::detail {
namespace {

#if defined(__SANITIZE_ADDRESS__)
constexpr size_t kStackBytes = size_t(256) << 10;  // ASan's redzones make frames larger
#else
constexpr size_t kStackBytes = size_t(64) << 10;
#endif

}  // namespace

thread_local StackBounds last_allocated_stack;

boost::context::stack_context PooledStack::allocate() {
  std::vector<void*>& pool = Pool();
  void* base;
  if (pool.empty()) {
    base = std::malloc(kStackBytes);
    if (base == nullptr) throw std::bad_alloc();
  } else {
    base = pool.back();
    pool.pop_back();
  }
  boost::context::stack_context stack;
  stack.size = kStackBytes;
  stack.sp = static_cast<char*>(base) + kStackBytes;
  last_allocated_stack = {base, kStackBytes};
  return stack;
}

void PooledStack::deallocate(boost::context::stack_context& stack) noexcept {
  void* base = static_cast<char*>(stack.sp) - stack.size;
#if defined(__SANITIZE_ADDRESS__)
  // Frames left on a fiber's stack never return, so ASan's poison of their redzones stays
  // behind; the next fiber on this stack starts clean.
  ASAN_UNPOISON_MEMORY_REGION(base, stack.size);
#endif
  Pool().push_back(base);
}

std::vector<void*>& PooledStack::Pool() {
  static thread_local Stacks stacks;
  return stacks.free;
}

}  // namespace gpusim::detail
