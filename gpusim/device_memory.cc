// The allocation registry; see device_memory.h.
#include "gpusim/device_memory.h"

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <map>
#include <mutex>
#include <vector>

#include "gpusim/check_options.h"
#include "gpusim/devices.h"
#include "gpusim/faults.h"
#include "gpusim/written_bits.h"

namespace gpusim {
namespace {

struct Registry {
  std::mutex mutex;
  std::map<uintptr_t, Region> regions;  // by base address
  std::vector<size_t> used;             // device bytes per GPU
  // Counts the allocations made and gone: what the access checks remember of the registry (which
  // addresses hold no allocation, which one does) is dropped when it changes.
  std::atomic<uint64_t> generation{0};
};

void Changed(Registry& r) { r.generation.fetch_add(1, std::memory_order_release); }

void Release(Registry& r, const Region& region) {
  detail::DeleteWrittenBits(region.written);
  Changed(r);
}

Registry& State() {
  static Registry* r = new Registry;
  return *r;
}

// Under the registry's lock.
const Region* Find(Registry& r, uintptr_t a) {
  auto it = r.regions.upper_bound(a);
  if (it == r.regions.begin()) return nullptr;
  --it;
  const Region& region = it->second;
  if (a < region.base + region.size || (a == region.base + region.size && region.size > 0)) return &region;
  return nullptr;
}

}  // namespace

Region Locate(const void* p) {
  Registry& r = State();
  std::lock_guard<std::mutex> lock(r.mutex);
  const Region* region = Find(r, reinterpret_cast<uintptr_t>(p));
  return region != nullptr ? *region : Region{};
}

bool Contains(const void* p, size_t bytes, Space space, int device) {
  const uintptr_t a = reinterpret_cast<uintptr_t>(p);
  Registry& r = State();
  std::lock_guard<std::mutex> lock(r.mutex);
  const Region* region = Find(r, a);
  if (region == nullptr || region->space != space || (device >= 0 && region->device != device)) return false;
  return a + bytes <= region->base + region->size && a + bytes >= a;
}

std::string Describe(const void* p) {
  const Region region = Locate(p);
  char text[160];
  const uintptr_t a = reinterpret_cast<uintptr_t>(p);
  switch (region.space) {
    case Space::kDevice:
      std::snprintf(text, sizeof text, "%p (byte %zu of a %zu-byte allocation on GPU %d)", p,
                    size_t(a - region.base), region.size, region.device);
      break;
    case Space::kPinned:
      std::snprintf(text, sizeof text, "%p (pinned host memory, byte %zu of %zu)", p, size_t(a - region.base),
                    region.size);
      break;
    default:
      std::snprintf(text, sizeof text, "%p (host memory, not allocated through CUDA)", p);
  }
  return text;
}

namespace detail {

void MarkDeviceWritten(const void* p, size_t bytes) {
  if (bytes == 0) return;
  const uintptr_t a = reinterpret_cast<uintptr_t>(p);
  Registry& r = State();
  std::lock_guard<std::mutex> lock(r.mutex);
  const Region* region = Find(r, a);
  if (region == nullptr || region->written == nullptr) return;
  const size_t from = a - region->base;
  MarkWritten(region->written, from, std::min(region->size, from + bytes));
}

bool FindDeviceForChecks(uintptr_t a, Region* region, uintptr_t* gap_begin, uintptr_t* gap_end) {
  Registry& r = State();
  std::lock_guard<std::mutex> lock(r.mutex);
  auto next = r.regions.upper_bound(a);
  *gap_begin = 0;
  *gap_end = next == r.regions.end() ? UINTPTR_MAX : next->first;
  if (next != r.regions.begin()) {
    const Region& before = std::prev(next)->second;
    if (a < before.base + before.size) {
      if (before.space != Space::kDevice) {  // pinned memory: not checked, remembered as a gap
        *gap_begin = before.base;
        *gap_end = before.base + before.size;
        return false;
      }
      *region = before;
      return true;
    }
    *gap_begin = before.base + before.size;
  }
  return false;
}

uint64_t RegistryGeneration() { return State().generation.load(std::memory_order_acquire); }

cudaError_t AllocateDevice(int device, size_t bytes, void** out) {
  *out = nullptr;
  if (bytes == 0) return cudaSuccess;
  SimDevice* d = DeviceAt(device);
  if (d == nullptr) return cudaErrorInvalidDevice;
  if (CountAllocation(device)) return cudaErrorMemoryAllocation;
  Registry& r = State();
  {
    std::lock_guard<std::mutex> lock(r.mutex);
    if (r.used.size() <= size_t(device)) r.used.resize(size_t(device) + 1, 0);
    if (bytes > d->total_bytes - r.used[size_t(device)]) return cudaErrorMemoryAllocation;
    r.used[size_t(device)] += bytes;
  }
  void* p = nullptr;
  // 256-byte aligned like cudaMalloc's; no slack after the last byte.
  if (posix_memalign(&p, 256, bytes) != 0) {
    std::lock_guard<std::mutex> lock(r.mutex);
    r.used[size_t(device)] -= bytes;
    return cudaErrorMemoryAllocation;
  }
  std::memset(p, 0xff, bytes);
  uint64_t* written = AccessChecksOn() ? NewWrittenBits(bytes) : nullptr;
  std::lock_guard<std::mutex> lock(r.mutex);
  r.regions[reinterpret_cast<uintptr_t>(p)] = {Space::kDevice, device, reinterpret_cast<uintptr_t>(p), bytes, written};
  Changed(r);
  *out = p;
  return cudaSuccess;
}

cudaError_t FreeDevice(void* p, int* device) {
  Registry& r = State();
  {
    std::lock_guard<std::mutex> lock(r.mutex);
    auto it = r.regions.find(reinterpret_cast<uintptr_t>(p));
    if (it == r.regions.end() || it->second.space != Space::kDevice) return cudaErrorInvalidValue;
    *device = it->second.device;
    r.used[size_t(*device)] -= it->second.size;
    Release(r, it->second);
    r.regions.erase(it);
  }
  std::free(p);
  return cudaSuccess;
}

cudaError_t AllocatePinned(size_t bytes, void** out) {
  *out = nullptr;
  if (bytes == 0) return cudaSuccess;
  void* p = nullptr;
  if (posix_memalign(&p, 256, bytes) != 0) return cudaErrorMemoryAllocation;
  Registry& r = State();
  std::lock_guard<std::mutex> lock(r.mutex);
  r.regions[reinterpret_cast<uintptr_t>(p)] = {Space::kPinned, -1, reinterpret_cast<uintptr_t>(p), bytes};
  Changed(r);
  *out = p;
  return cudaSuccess;
}

cudaError_t FreePinned(void* p) {
  if (p == nullptr) return cudaSuccess;
  Registry& r = State();
  {
    std::lock_guard<std::mutex> lock(r.mutex);
    auto it = r.regions.find(reinterpret_cast<uintptr_t>(p));
    if (it == r.regions.end() || it->second.space != Space::kPinned) return cudaErrorInvalidValue;
    r.regions.erase(it);
    Changed(r);
  }
  std::free(p);
  return cudaSuccess;
}

size_t UsedBytes(int device) {
  Registry& r = State();
  std::lock_guard<std::mutex> lock(r.mutex);
  return size_t(device) < r.used.size() ? r.used[size_t(device)] : 0;
}

void FreeAllOf(int device) {
  std::vector<void*> freed;
  Registry& r = State();
  {
    std::lock_guard<std::mutex> lock(r.mutex);
    for (auto it = r.regions.begin(); it != r.regions.end();) {
      if (it->second.space == Space::kDevice && it->second.device == device) {
        freed.push_back(reinterpret_cast<void*>(it->first));
        Release(r, it->second);
        it = r.regions.erase(it);
      } else {
        ++it;
      }
    }
    if (size_t(device) < r.used.size()) r.used[size_t(device)] = 0;
  }
  for (void* p : freed) std::free(p);
}

}  // namespace detail
}  // namespace gpusim
