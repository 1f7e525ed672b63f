// What devices this process can use. A build without CUDA, or a machine without a GPU, simply
// reports zero CUDA devices; the CPU is always there.
#pragma once

#include <cstdint>
#include <string>

#include "engine/device.h"
#include "kernels/model.h"

namespace xmlt::engine {

// What a CUDA replica of `shape` within `limits` allocates on GPU `ordinal` (parameters, the
// velocity, activations and scratch, the staged batch, its cuBLAS workspace) and in pinned host
// memory, in bytes, with the number of device allocations; all zero when it cannot be known here
// (no CUDA build, or no such GPU).
struct GpuReplicaBytes {
  uint64_t params = 0, momentum = 0, workspace = 0, batch = 0, pinned_host = 0, allocations = 0;
};
// bf16_state, bf16_weights: the replica keeps its optimizer state (--optimizer-state bf16) or its
// weights (--weights bf16) in bf16.
GpuReplicaBytes PlanGpuReplica(int ordinal, const kernels::ModelShape& shape, const DeviceLimits& limits,
                               bool bf16_state = false, bool bf16_weights = false);

int CudaDeviceCount();           // 0 when CUDA is not built in or no GPU/driver is present
std::string CudaDeviceSummary(); // "2 CUDA devices: NVIDIA H100 (sm_90, 79 GiB), ..." or why none
uint64_t CudaFreeMemory(int ordinal);  // free bytes on the GPU (opening its context); 0 when unknown

}  // namespace xmlt::engine
