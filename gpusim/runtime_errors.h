// How the simulator's CUDA runtime calls (runtime_*.cc) fail: as the runtime does, by returning the
// error and keeping it as the host thread's last error, and saying why on stderr where the code
// alone would not tell.
#pragma once

#include <string>

#include "gpusim/error_codes.h"

namespace gpusim::runtime {

// Keeps `error` as the last error (cudaGetLastError) and returns it.
cudaError_t Fail(cudaError_t error);

// Fail, saying why on stderr.
cudaError_t Refuse(cudaError_t error, const std::string& why);

// cudaErrorNoDevice when there is no GPU, `otherwise` else.
cudaError_t NoDeviceOr(cudaError_t otherwise);

}  // namespace gpusim::runtime
