// Shared by the simulator's own tests: every test starts on GPU 0 with fresh contexts and no
// armed fault, so that one test's injected error cannot leak into the next when all run in one
// process.
#pragma once

#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <optional>
#include <string>

#include "gpusim/check_options.h"
#include "gpusim/devices.h"
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

// Racecheck and initcheck on or off for one test, whatever the environment says.
class ScopedAccessChecks {
 public:
  explicit ScopedAccessChecks(bool on) : was_(AccessChecksOn()) { SetAccessChecks(on); }
  ~ScopedAccessChecks() { SetAccessChecks(was_); }

 private:
  bool was_;
};

// The default turn order (nullopt) or a seeded one for one test, whatever XMLT_SIM_ORDER says.
class ScopedTurnOrder {
 public:
  explicit ScopedTurnOrder(std::optional<uint64_t> seed) : was_(TurnOrderSeed()) { SetTurnOrderSeed(seed); }
  ~ScopedTurnOrder() { SetTurnOrderSeed(was_); }

 private:
  std::optional<uint64_t> was_;
};

// The tests of racecheck and initcheck: the checks on, in the default turn order (which thread
// comes first is known); skipped in a sanitized build, which compiles them out.
class AccessChecksTest : public SimTest {
 protected:
  void SetUp() override {
    SimTest::SetUp();
    if (!AccessChecksCompiled()) GTEST_SKIP() << "racecheck and initcheck are not compiled into a sanitized build";
  }
  ScopedAccessChecks checks_{true};
  ScopedTurnOrder order_{std::nullopt};
};

// Waits for GPU 0's work and returns why its context was lost, or "" if the launch succeeded.
inline std::string LaunchFailure() {
  cudaDeviceSynchronize();
  return detail::ContextLossReason(0);
}

}  // namespace gpusim::testing
