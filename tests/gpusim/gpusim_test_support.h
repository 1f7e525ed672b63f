// Shared by the simulator's own tests: every test starts on GPU 0 with fresh contexts and no
// armed fault, so that one test's injected error cannot leak into the next when all run in one
// process.
#pragma once

#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include "gpusim/faults.h"
#include "kernels/cuda/launch.h"

namespace gpusim::testing {

class SimTest : public ::testing::Test {
 protected:
  void SetUp() override { Reset(); }
  void TearDown() override { Reset(); }

  static void Reset() {
    ClearInjectedFaults();
    int count = 0;
    cudaGetDeviceCount(&count);
    for (int d = 0; d < count; ++d) {
      cudaSetDevice(d);
      cudaDeviceReset();
    }
    cudaSetDevice(0);
    cudaGetLastError();
  }
};

}  // namespace gpusim::testing
