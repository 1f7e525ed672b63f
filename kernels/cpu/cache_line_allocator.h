// An allocator for std::vector whose storage starts on a 64-byte cache line: the fused output
// layer streams its logits out with non-temporal stores, which need aligned addresses, and
// malloc's large blocks start 16 bytes past a page.
#pragma once

#include <cstddef>
#include <new>

namespace xmlt::kernels::cpu {

template <class T>
struct CacheLineAllocator {
  using value_type = T;
  static constexpr std::align_val_t kAlignment{64};

  CacheLineAllocator() = default;
  template <class U>
  CacheLineAllocator(const CacheLineAllocator<U>&) noexcept {}

  T* allocate(std::size_t n) { return static_cast<T*>(::operator new(n * sizeof(T), kAlignment)); }
  void deallocate(T* p, std::size_t) noexcept { ::operator delete(p, kAlignment); }

  template <class U>
  bool operator==(const CacheLineAllocator<U>&) const noexcept {
    return true;
  }
  template <class U>
  bool operator!=(const CacheLineAllocator<U>&) const noexcept {
    return false;
  }
};

}  // namespace xmlt::kernels::cpu
