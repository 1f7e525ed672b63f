// What devices this process can use. A build without CUDA, or a machine without a GPU, simply
// reports zero CUDA devices; the CPU is always there.
#pragma once

#include <cstdint>
#include <string>

namespace xmlt::engine {

int CudaDeviceCount();           // 0 when CUDA is not built in or no GPU/driver is present
std::string CudaDeviceSummary(); // "2 CUDA devices: NVIDIA H100 (sm_90, 79 GiB), ..." or why none
uint64_t CudaFreeMemory(int ordinal);  // free bytes on the GPU; 0 when unknown

}  // namespace xmlt::engine
