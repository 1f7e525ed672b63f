// Device query for builds without CUDA; the CUDA build compiles device_query.cu instead.
#include "engine/device_query.h"

namespace xmlt::engine {

int CudaDeviceCount() { return 0; }
std::string CudaDeviceSummary() { return "CUDA support not built in"; }
uint64_t CudaFreeMemory(int) { return 0; }
GpuReplicaBytes PlanGpuReplica(int, const kernels::ModelShape&, const DeviceLimits&, bool, bool) { return {}; }

}  // namespace xmlt::engine
