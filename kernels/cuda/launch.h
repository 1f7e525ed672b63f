// One spelling of a kernel launch and of dynamic shared memory for both builds of the CUDA
// backend: nvcc sees the real `kernel<<<grid, block, shared, stream>>>(args)` and `extern __shared__`;
// the simulated-GPU build (XMLT_CUDA=SIM, gpusim/) compiles the same kernel code with the host
// compiler and runs the grid on its simulated threads. XMLT_SIM_KERNEL_BYTES(bytes), before a
// launch, tells the simulator's virtual clock (gpusim/timing.h) how much device memory that kernel
// reads and writes; nvcc drops it.
#pragma once

#ifdef XMLT_GPUSIM
#include "gpusim/kernel_launch.h"
#include "gpusim/timing.h"
#define XMLT_LAUNCH(kernel, grid, block, shared_bytes, stream) \
  ::gpusim::Launch(kernel, grid, block, shared_bytes, stream, #kernel)
#define XMLT_DYNAMIC_SHARED(type, name) type* name = static_cast<type*>(::gpusim::detail::DynamicSharedMemory())
#define XMLT_SIM_KERNEL_BYTES(bytes) ::gpusim::timing::KernelBytes(bytes)
#else
#define XMLT_LAUNCH(kernel, grid, block, shared_bytes, stream) kernel<<<grid, block, shared_bytes, stream>>>
#define XMLT_DYNAMIC_SHARED(type, name) extern __shared__ type name[]
#define XMLT_SIM_KERNEL_BYTES(bytes) ((void)0)
#endif
