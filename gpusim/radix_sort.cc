// Submission of the simulated CUB sort; see radix_sort.h.
#include "gpusim/radix_sort.h"

#include "gpusim/device_memory.h"
#include "gpusim/devices.h"
#include "gpusim/faults.h"
#include "gpusim/streams.h"

namespace gpusim::detail {

cudaError_t SubmitSort(CUstream_st* handle, const std::vector<std::pair<const void*, size_t>>& ranges,
                       std::function<void()> work) {
  CUstream_st* stream = ResolveStream(handle);
  if (stream == nullptr) return cudaErrorInvalidResourceHandle;
  const int gpu = stream->device;
  if (const cudaError_t sticky = StickyError(gpu)) return sticky;
  std::string misuse;
  for (const auto& [p, bytes] : ranges)
    if (misuse.empty() && !Contains(p, bytes, Space::kDevice, gpu))
      misuse = "a range of " + std::to_string(bytes) + " bytes at " + Describe(p) +
               " is not inside one device allocation of GPU " + std::to_string(gpu);
  const cudaError_t injected = CountLaunch(gpu);
  Enqueue(stream, [=, work = std::move(work)] {
    if (injected != cudaSuccess) return LoseContext(gpu, injected, "injected fault in cub::DeviceRadixSort");
    if (!misuse.empty()) return LoseContext(gpu, cudaErrorIllegalAddress, "cub::DeviceRadixSort: " + misuse);
    work();
  });
  return cudaSuccess;
}

}  // namespace gpusim::detail
