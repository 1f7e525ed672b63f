// The CUDA runtime's errors over the simulated GPUs: their names and descriptions, the host
// thread's last error, and how the other runtime calls fail (runtime_errors.h).
#include "gpusim/runtime_errors.h"

#include <cuda_runtime.h>

#include <cstdio>
#include <string>

#include "gpusim/devices.h"

using namespace gpusim;
using namespace gpusim::detail;

namespace {

struct ErrorText {
  cudaError_t code;
  const char* name;
  const char* text;
};

// The runtime's own names and descriptions.
constexpr ErrorText kErrors[] = {
    {cudaSuccess, "cudaSuccess", "no error"},
    {cudaErrorInvalidValue, "cudaErrorInvalidValue", "invalid argument"},
    {cudaErrorMemoryAllocation, "cudaErrorMemoryAllocation", "out of memory"},
    {cudaErrorInitializationError, "cudaErrorInitializationError", "initialization error"},
    {cudaErrorInvalidConfiguration, "cudaErrorInvalidConfiguration", "invalid configuration argument"},
    {cudaErrorInvalidDevicePointer, "cudaErrorInvalidDevicePointer", "invalid device pointer"},
    {cudaErrorInvalidMemcpyDirection, "cudaErrorInvalidMemcpyDirection", "invalid copy direction for memcpy"},
    {cudaErrorInsufficientDriver, "cudaErrorInsufficientDriver",
     "CUDA driver version is insufficient for CUDA runtime version"},
    {cudaErrorNoDevice, "cudaErrorNoDevice", "no CUDA-capable device is detected"},
    {cudaErrorInvalidDevice, "cudaErrorInvalidDevice", "invalid device ordinal"},
    {cudaErrorECCUncorrectable, "cudaErrorECCUncorrectable", "uncorrectable ECC error encountered"},
    {cudaErrorPeerAccessUnsupported, "cudaErrorPeerAccessUnsupported",
     "peer access is not supported between these two devices"},
    {cudaErrorPeerAccessAlreadyEnabled, "cudaErrorPeerAccessAlreadyEnabled", "peer access is already enabled"},
    {cudaErrorInvalidResourceHandle, "cudaErrorInvalidResourceHandle", "invalid resource handle"},
    {cudaErrorNotReady, "cudaErrorNotReady", "device not ready"},
    {cudaErrorIllegalAddress, "cudaErrorIllegalAddress", "an illegal memory access was encountered"},
    {cudaErrorLaunchOutOfResources, "cudaErrorLaunchOutOfResources", "too many resources requested for launch"},
    {cudaErrorLaunchTimeout, "cudaErrorLaunchTimeout", "the launch timed out and was terminated"},
    {cudaErrorAssert, "cudaErrorAssert", "device-side assert triggered"},
    {cudaErrorHardwareStackError, "cudaErrorHardwareStackError", "hardware stack error"},
    {cudaErrorIllegalInstruction, "cudaErrorIllegalInstruction", "an illegal instruction was encountered"},
    {cudaErrorMisalignedAddress, "cudaErrorMisalignedAddress", "misaligned address"},
    {cudaErrorInvalidAddressSpace, "cudaErrorInvalidAddressSpace",
     "operation not supported on global/shared address space"},
    {cudaErrorInvalidPc, "cudaErrorInvalidPc", "invalid program counter"},
    {cudaErrorLaunchFailure, "cudaErrorLaunchFailure", "unspecified launch failure"},
    {cudaErrorUnknown, "cudaErrorUnknown", "unknown error"},
};

const ErrorText* Lookup(cudaError_t error) {
  for (const ErrorText& e : kErrors)
    if (e.code == error) return &e;
  return nullptr;
}

}  // namespace

namespace gpusim::runtime {

cudaError_t Fail(cudaError_t error) {
  SetLastError(error);
  return error;
}

// A refused call says why on stderr: the error code alone would not tell which pointer was wrong.
cudaError_t Refuse(cudaError_t error, const std::string& why) {
  std::fprintf(stderr, "gpusim: %s\n", why.c_str());
  return Fail(error);
}

cudaError_t NoDeviceOr(cudaError_t otherwise) {
  return DeviceCount() == 0 ? cudaErrorNoDevice : otherwise;
}

}  // namespace gpusim::runtime

const char* cudaGetErrorName(cudaError_t error) {
  const ErrorText* e = Lookup(error);
  return e != nullptr ? e->name : "cudaErrorUnknown";
}

const char* cudaGetErrorString(cudaError_t error) {
  const ErrorText* e = Lookup(error);
  return e != nullptr ? e->text : "unrecognized error code";
}

cudaError_t cudaGetLastError() { return TakeLastError(); }
cudaError_t cudaPeekAtLastError() { return PeekLastError(); }
