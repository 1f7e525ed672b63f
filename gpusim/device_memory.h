// Device memory kept apart from host memory. Every cudaMalloc is a heap block of its own, exactly
// the size asked for (so ASan sees an access one past its end), filled with 0xff bytes as a card's
// memory holds garbage; every pinned host allocation is registered too. The registry tells device
// memory from pinned and from ordinary (pageable) host memory, which is how copies of the wrong
// kind and host pointers handed to kernels are caught.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "gpusim/error_codes.h"

namespace gpusim {

enum class Space { kPageable, kPinned, kDevice };

struct Region {
  Space space = Space::kPageable;
  int device = -1;      // for kDevice
  uintptr_t base = 0;   // of the allocation holding the pointer (kPinned, kDevice)
  size_t size = 0;
};

// The allocation holding `p` (an address one past an allocation's end counts as its own, as a
// pointer to the end of an array does), or kPageable.
Region Locate(const void* p);
// Whether [p, p + bytes) lies in one allocation of `space` (on `device` for kDevice; -1: any).
bool Contains(const void* p, size_t bytes, Space space, int device = -1);
std::string Describe(const void* p);

namespace detail {

cudaError_t AllocateDevice(int device, size_t bytes, void** out);
// Frees a device allocation; *device tells on which GPU it was. cudaErrorInvalidValue if `p` is not
// the start of one.
cudaError_t FreeDevice(void* p, int* device);
cudaError_t AllocatePinned(size_t bytes, void** out);
cudaError_t FreePinned(void* p);
size_t UsedBytes(int device);
// cudaDeviceReset: every allocation of the GPU goes.
void FreeAllOf(int device);

}  // namespace detail
}  // namespace gpusim
