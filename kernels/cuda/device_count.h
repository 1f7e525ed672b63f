// How many CUDA devices this process can use; compiles without CUDA headers so that any code
// (tests, the engine) can ask before touching the CUDA backend.
#pragma once

#include <string>

namespace xmlt::kernels::cuda {

// 0 when there is no driver, no device, or the runtime fails to initialize; never throws.
int CudaDeviceCountOrZero();

// Why CudaDeviceCountOrZero() is 0, in the runtime's words ("CUDA driver version is insufficient
// for CUDA runtime version", "no CUDA-capable device is detected", ...); "" when there is a device.
// A broken driver must read as broken, not as a machine without a GPU.
std::string CudaUnavailableReason();

}  // namespace xmlt::kernels::cuda
