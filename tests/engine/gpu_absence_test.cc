// Issue: reliability, fifth round, row 15. A CPU-only machine printed "CUDA driver version is
// insufficient for CUDA runtime version" in the device line of every run, and in the refusal of a
// --devices cuda:N it cannot have. Without a GPU the line says "no GPU found".
#include "engine/gpu_absence.h"

#include <gtest/gtest.h>

#include <string>

#include "engine/device_query.h"

namespace xmlt::engine {
namespace {

TEST(GpuAbsence, NoDriverOrNoDeviceIsNoGpuFound) {
  const std::string insufficient = "CUDA driver version is insufficient for CUDA runtime version";
  EXPECT_EQ(NoGpuText(false, insufficient, /*driver_present=*/false), "no GPU found");
  EXPECT_EQ(NoGpuText(true, "no CUDA-capable device is detected", /*driver_present=*/true), "no GPU found");
  // A driver that is there but too old is the cause, and is said.
  EXPECT_EQ(NoGpuText(false, insufficient, /*driver_present=*/true), "no CUDA devices (" + insufficient + ")");
}

TEST(GpuAbsence, TheDeviceSummaryOfAMachineWithoutADriverSaysNoGpuFound) {
  if (NvidiaDriverPresent() || CudaDeviceCount() > 0)
    GTEST_SKIP() << "this machine has the NVIDIA driver, or GPUs (simulated ones too)";
  const std::string summary = CudaDeviceSummary();
  EXPECT_TRUE(summary == "no GPU found" || summary == "CUDA support not built in") << summary;
}

}  // namespace
}  // namespace xmlt::engine
