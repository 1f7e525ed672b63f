// Injected faults: a sticky error at the k-th launch, out of memory at the k-th device allocation.
// Set from the environment at start-up, or by a test:
//   XMLT_SIM_FAULT_LAUNCH=k[:code][@gpu]  the k-th launch (1-based; of any GPU, or of GPU `gpu`)
//                                         fails with `code` (default 700, an illegal address);
//                                         kernels, GEMMs, scalings and sorts all count as launches.
//   XMLT_SIM_FAULT_ALLOC=k[@gpu]          the k-th cudaMalloc fails with cudaErrorMemoryAllocation.
// A launch's fault surfaces as a real one does: when the work runs (at the next synchronization),
// after which every call on that GPU returns the error.
#pragma once

#include <cstdint>
#include <string>

#include "gpusim/error_codes.h"

namespace gpusim {

// Counting starts at the call: k = 1 is the next launch. gpu = -1 counts every GPU.
void InjectStickyErrorAtLaunch(uint64_t k, cudaError_t code = cudaErrorIllegalAddress, int gpu = -1);
void InjectOutOfMemoryAtAllocation(uint64_t k, int gpu = -1);
void ClearInjectedFaults();

namespace detail {

// Counts a launch on `gpu` and returns the error it is to fail with, or cudaSuccess.
cudaError_t CountLaunch(int gpu);
// Counts an allocation on `gpu` and returns whether it is to fail.
bool CountAllocation(int gpu);

}  // namespace detail
}  // namespace gpusim
