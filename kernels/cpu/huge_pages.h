// 2 MiB pages under a large buffer that is read at random: SLIDE's step touches a few hundred
// scattered rows of a layer of hundreds of MB per training row, and with 4 KiB pages nearly every
// one of them also misses the TLB.
#pragma once

#include <cstddef>

namespace xmlt::kernels::cpu {

// Asks the kernel to back the whole 2 MiB pages inside [data, data + bytes) with huge pages, now
// (MADV_HUGEPAGE, then MADV_COLLAPSE for memory already touched). Best effort: on a kernel
// without transparent huge pages, or before Linux 6.1 (no MADV_COLLAPSE), the buffer keeps its
// pages. Its contents never change.
void AdviseHugePages(void* data, size_t bytes);

}  // namespace xmlt::kernels::cpu
