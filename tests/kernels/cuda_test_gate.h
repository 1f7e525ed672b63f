// The first line of every CUDA test: without a usable GPU the test is skipped, with the runtime's
// reason, or fails where XMLT_REQUIRE_GPU=1 says a GPU must be there (scripts/gpu-check.sh sets
// it). A GPU run whose driver or runtime is broken then reads as red, not as a row of green skips.
#pragma once

#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <string>

#include "kernels/cuda/device_count.h"

namespace xmlt::testing {

inline bool GpuRequired() {
  const char* value = std::getenv("XMLT_REQUIRE_GPU");
  return value != nullptr && std::strcmp(value, "") != 0 && std::strcmp(value, "0") != 0;
}

}  // namespace xmlt::testing

#define XMLT_SKIP_WITHOUT_GPU()                                                                  \
  do {                                                                                           \
    const std::string xmlt_why_no_gpu = ::xmlt::kernels::cuda::CudaUnavailableReason();          \
    if (!xmlt_why_no_gpu.empty()) {                                                              \
      if (::xmlt::testing::GpuRequired())                                                        \
        FAIL() << "XMLT_REQUIRE_GPU is set but no CUDA device can run this test: "               \
               << xmlt_why_no_gpu;                                                               \
      GTEST_SKIP() << "no CUDA device (" << xmlt_why_no_gpu << "): the CUDA code cannot run here"; \
    }                                                                                            \
  } while (false)
