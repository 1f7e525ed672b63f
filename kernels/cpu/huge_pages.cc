// See huge_pages.h.
#include "kernels/cpu/huge_pages.h"

#include <sys/mman.h>

#include <cstdint>

#ifndef MADV_COLLAPSE
#define MADV_COLLAPSE 25  // Linux 6.1; older headers lack it, older kernels refuse it (EINVAL)
#endif

namespace xmlt::kernels::cpu {

void AdviseHugePages(void* data, size_t bytes) {
  constexpr uintptr_t kHugePage = uintptr_t{2} << 20;
  const uintptr_t first = reinterpret_cast<uintptr_t>(data);
  const uintptr_t begin = (first + kHugePage - 1) & ~(kHugePage - 1);
  const uintptr_t end = (first + bytes) & ~(kHugePage - 1);
  if (end <= begin) return;
  void* range = reinterpret_cast<void*>(begin);
  if (::madvise(range, end - begin, MADV_HUGEPAGE) != 0) return;
  (void)::madvise(range, end - begin, MADV_COLLAPSE);
}

}  // namespace xmlt::kernels::cpu
