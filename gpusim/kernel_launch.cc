// Kernel submission: the launch checks a card makes, the injected launch fault, and the grid run
// in stream order; see kernel_launch.h.
#include "gpusim/kernel_launch.h"

#include "gpusim/block_scheduler.h"
#include "gpusim/check_options.h"
#include "gpusim/device_memory.h"
#include "gpusim/devices.h"
#include "gpusim/faults.h"
#include "gpusim/streams.h"
#include "gpusim/timing.h"

namespace gpusim::detail {
namespace {

constexpr unsigned kMaxThreadsPerBlock = 1024;
constexpr size_t kMaxDynamicShared = 48 << 10;  // without opting in to more, as on a card

}  // namespace

std::string CheckKernelPointer(const void* p, size_t index) {
  if (p == nullptr) return {};
  const Region region = Locate(p);
  const int gpu = CurrentOrdinal();
  if (region.space == Space::kPinned) return {};  // mapped into every GPU's address space
  if (region.space == Space::kDevice && region.device == gpu) return {};
  return "argument " + std::to_string(index) + " is " + Describe(p) + ", which a kernel on GPU " +
         std::to_string(gpu) + " cannot address";
}

void SubmitKernel(const char* name, dim3 grid, dim3 block, size_t shared_bytes, CUstream_st* handle,
                  std::string misuse, std::function<void()> thread_body) {
  const int gpu = CurrentOrdinal();
  const uint64_t bytes = TakeKernelBytes();  // this launch's, even if it is refused
  const cudaError_t sticky = ContextError(gpu);
  if (sticky != cudaSuccess) return SetLastError(sticky);
  CUstream_st* stream = ResolveStream(handle);
  if (stream == nullptr) return SetLastError(cudaErrorInvalidResourceHandle);
  const uint64_t threads = uint64_t(block.x) * block.y * block.z;
  if (threads == 0 || threads > kMaxThreadsPerBlock || block.z > 64 || grid.x == 0 || grid.y == 0 ||
      grid.z == 0 || grid.x > 0x7fffffffu || grid.y > 65535 || grid.z > 65535)
    return SetLastError(cudaErrorInvalidConfiguration);
  if (shared_bytes > kMaxDynamicShared) return SetLastError(cudaErrorInvalidValue);
  if (stream->device != gpu) return SetLastError(cudaErrorInvalidResourceHandle);
  const cudaError_t injected = CountLaunch(gpu);
  Enqueue(stream, [=, misuse = std::move(misuse), body = std::move(thread_body)] {
    if (injected != cudaSuccess)
      return LoseContext(gpu, injected, std::string("injected fault in kernel ") + name);
    if (!misuse.empty()) return LoseContext(gpu, cudaErrorIllegalAddress, std::string("kernel ") + name + ": " + misuse);
    if (bytes == UINT64_MAX) {
      CountUnhintedKernel();
    } else {
      ChargeMemory(gpu, bytes);
    }
    const std::string error = RunGrid(name, grid, block, shared_bytes, body);
    if (!error.empty())
      LoseContext(gpu, cudaErrorLaunchFailure,
                  std::string("kernel ") + name + ": " + error + " [" + DescribeTurnOrder() + "]");
  });
}

}  // namespace gpusim::detail
