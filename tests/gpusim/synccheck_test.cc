// Synccheck: a __syncthreads that some threads of a block reach and others do not (another
// barrier, or the kernel's end) fails the launch, naming the barriers; a uniform one passes.
#include <cuda_runtime.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

#include "kernels/cuda/device_buffer.h"
#include "tests/gpusim/gpusim_test_support.h"

namespace gpusim::testing {
namespace {

using xmlt::kernels::cuda::DeviceBuffer;
using ::testing::HasSubstr;

constexpr unsigned kThreads = 64;

// The two halves of the block wait at different barriers.
__global__ void TwoBarriersKernel(int* out) {
  if (threadIdx.x < kThreads / 2) {
    out[threadIdx.x] = 1;
    __syncthreads();
  } else {
    out[threadIdx.x] = 2;
    __syncthreads();
  }
}

TEST_F(SimTest, ThreadsAtDifferentBarriersFailTheLaunch) {
  DeviceBuffer<int> out(kThreads);
  XMLT_LAUNCH(TwoBarriersKernel, 1, kThreads, 0, nullptr)(out.data());
  const std::string why = LaunchFailure();
  EXPECT_THAT(why, HasSubstr("kernel TwoBarriersKernel: synccheck: divergent __syncthreads: "));
  EXPECT_THAT(why, HasSubstr("tests/gpusim/synccheck_test.cc:"));
}

// Half of the block leaves before the barrier the other half waits at.
template <bool kDivergent>
__global__ void EarlyExitKernel(int* out) {
  if (kDivergent && threadIdx.x >= kThreads / 2) return;
  out[threadIdx.x] = 1;
  __syncthreads();
  out[threadIdx.x] = 2;
}

TEST_F(SimTest, ABarrierSomeThreadsExitedBeforeFailsTheLaunch) {
  DeviceBuffer<int> out(kThreads);
  XMLT_LAUNCH(EarlyExitKernel<true>, 1, kThreads, 0, nullptr)(out.data());
  const std::string why = LaunchFailure();
  EXPECT_THAT(why, HasSubstr("kernel EarlyExitKernel<true>: synccheck: __syncthreads at tests/gpusim/synccheck_test.cc:"));
  EXPECT_THAT(why, HasSubstr("is not reached by every thread"));
  EXPECT_THAT(why, HasSubstr("has exited"));
}

TEST_F(SimTest, ABarrierEveryThreadReachesPasses) {
  DeviceBuffer<int> out(kThreads);
  XMLT_LAUNCH(EarlyExitKernel<false>, 1, kThreads, 0, nullptr)(out.data());
  ASSERT_EQ(LaunchFailure(), "");
  EXPECT_EQ(out.ToHost()[kThreads - 1], 2);
}

}  // namespace
}  // namespace gpusim::testing
