// The simulated GPUs: how many (XMLT_SIM_GPUS, default 2) and the memory of each
// (XMLT_SIM_GPU_MEMORY in bytes, with K/M/G/T suffixes in powers of 1024, default 16G); the
// current device and last error of each host thread; a GPU's lost context (a sticky error); which
// contexts the process opened (with XMLT_SIM_REPORT_CONTEXTS=1, said on stderr at exit).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>

#include "gpusim/error_codes.h"

namespace gpusim {

struct SimDevice {
  int ordinal = 0;
  size_t total_bytes = 0;
  // cudaSuccess, or the sticky error that lost this GPU's context.
  std::atomic<int> sticky{cudaSuccess};
  // Why, once `sticky` is set (written once by the thread that set it, before `lost_why_ready`).
  std::string lost_why;
  std::atomic<bool> lost_why_ready{false};
  // Whether this process has opened the GPU's primary context: since CUDA 12, cudaSetDevice and
  // the first call that needs the device do, and on a card each context holds memory.
  std::atomic<bool> context_opened{false};
};

// Parses "16G", "512MiB", "1073741824"; returns false on anything else.
bool ParseByteSize(const std::string& text, uint64_t* bytes);

int DeviceCount();
SimDevice* DeviceAt(int ordinal);  // null outside [0, DeviceCount())

namespace detail {

int& CurrentOrdinal();
void SetLastError(cudaError_t error);
cudaError_t TakeLastError();
cudaError_t PeekLastError();
void ClearLastError();

// The error calls on `ordinal` return: its sticky error, or cudaSuccess.
cudaError_t StickyError(int ordinal);
// StickyError for a call that needs GPU `ordinal`'s context, which it opens if not yet open.
cudaError_t ContextError(int ordinal);
// Loses the context of GPU `ordinal` with `code`; `why` goes to stderr, as a card's error log would.
void LoseContext(int ordinal, cudaError_t code, const std::string& why);
// Why GPU `ordinal` lost its context ("" while it has not): what LoseContext printed, for tests
// that check a failed launch's report.
std::string ContextLossReason(int ordinal);
// Gives GPU `ordinal` a fresh context (cudaDeviceReset).
void ResetContext(int ordinal);

}  // namespace detail
}  // namespace gpusim
