// Device memory kept apart from host memory. Every cudaMalloc is a heap block of its own, exactly
// the size asked for (so ASan sees an access one past its end), filled with 0xff bytes as a card's
// memory holds garbage; every pinned host allocation is registered too. The registry tells device
// memory from pinned and from ordinary (pageable) host memory, which is how copies of the wrong
// kind and host pointers handed to kernels are caught. With the access checks on, each device
// allocation also has initcheck's record of the bytes written since it was allocated
// (written_bits.h): kernels' stores mark it through the access hooks, and every copy, memset and
// library call that writes device memory marks it through MarkDeviceWritten.
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
  uint64_t* written = nullptr;  // kDevice with the access checks on: a bit per byte (written_bits.h)
};

// The allocation holding `p` (an address one past an allocation's end counts as its own, as a
// pointer to the end of an array does), or kPageable.
Region Locate(const void* p);
// Whether [p, p + bytes) lies in one allocation of `space` (on `device` for kDevice; -1: any).
bool Contains(const void* p, size_t bytes, Space space, int device = -1);
std::string Describe(const void* p);

namespace detail {

// Marks [p, p + bytes) as written for initcheck, where it is device memory; elsewhere nothing.
void MarkDeviceWritten(const void* p, size_t bytes);
// For the access checks: the device allocation holding the byte at `a` (one past the end does not
// count here), or false with [*gap_begin, *gap_end) set to the addresses around `a` that no device
// allocation holds. RegistryGeneration changes whenever an allocation comes or goes, so that
// what the checks remember of this lookup can be dropped.
bool FindDeviceForChecks(uintptr_t a, Region* region, uintptr_t* gap_begin, uintptr_t* gap_end);
uint64_t RegistryGeneration();

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
