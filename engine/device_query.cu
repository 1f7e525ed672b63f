// Device query through the CUDA runtime; see device_query.h.
#include <cuda_runtime.h>

#include <string>
#include <thread>

#include "engine/device_query.h"
#include "engine/gpu_absence.h"
#include "kernels/cuda/cuda_mlp.h"
#include "kernels/cuda/device_count.h"

namespace xmlt::engine {

// Counted in one place, the CUDA backend's (no driver or no device is not an error: xmltrain then
// runs on the CPU).
int CudaDeviceCount() { return kernels::cuda::CudaDeviceCountOrZero(); }

std::string CudaDeviceSummary() {
  int count = 0;
  const cudaError_t status = cudaGetDeviceCount(&count);
  if (status != cudaSuccess) {
    cudaGetLastError();
    return NoGpuText(status == cudaErrorNoDevice, cudaGetErrorString(status), NvidiaDriverPresent());
  }
  if (count == 0) return "no GPU found";
  std::string text = std::to_string(count) + " CUDA device" + (count == 1 ? "" : "s");
  for (int i = 0; i < count; ++i) {
    cudaDeviceProp prop{};
    if (cudaGetDeviceProperties(&prop, i) != cudaSuccess) continue;
    text += (i == 0 ? ": " : ", ") + std::string(prop.name) + " (sm_" + std::to_string(prop.major) +
            std::to_string(prop.minor) + ", " + std::to_string(prop.totalGlobalMem >> 30) + " GiB)";
  }
  return text;
}

uint64_t CudaFreeMemory(int ordinal) {
  // On a thread of its own: the current device is per-thread, and setting this one back on the
  // caller's thread would open the caller's device's context (cudaSetDevice does, since CUDA 12).
  uint64_t free_memory = 0;
  std::thread query([&] {
    size_t free_bytes = 0, total_bytes = 0;
    if (cudaSetDevice(ordinal) != cudaSuccess || cudaMemGetInfo(&free_bytes, &total_bytes) != cudaSuccess) {
      cudaGetLastError();
      return;
    }
    free_memory = free_bytes;
  });
  query.join();
  return free_memory;
}

GpuReplicaBytes PlanGpuReplica(int ordinal, const kernels::ModelShape& shape, const DeviceLimits& limits,
                               bool bf16_state, bool bf16_weights) {
  if (ordinal < 0 || ordinal >= CudaDeviceCount()) return {};
  using kernels::cuda::StateFormat;
  const kernels::cuda::CudaMlpBytes b = kernels::cuda::CudaMlp::PlannedBytes(
      ordinal, shape, limits.max_rows, limits.max_feature_nnz, limits.max_label_nnz, kernels::cuda::kMaxWarpTopK,
      bf16_state ? StateFormat::kBf16 : StateFormat::kFp32, bf16_weights ? StateFormat::kBf16 : StateFormat::kFp32);
  // The cuBLAS workspace is scratch like the activations.
  return {b.params, b.velocity, b.workspace + b.blas, b.batch, b.pinned_host, b.allocations};
}

}  // namespace xmlt::engine
