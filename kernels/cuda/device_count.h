// How many CUDA devices this process can use; compiles without CUDA headers so that any code
// (tests, the engine) can ask before touching the CUDA backend.
#pragma once

namespace xmlt::kernels::cuda {

// 0 when there is no driver, no device, or the runtime fails to initialize; never throws.
int CudaDeviceCountOrZero();

}  // namespace xmlt::kernels::cuda
