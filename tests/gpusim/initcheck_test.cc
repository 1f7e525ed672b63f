// Initcheck: a read of shared memory the block has not written, or of device memory nothing has
// written since it was allocated, fails the launch with the word and the line; memory written by
// a thread, a copy, a memset or an earlier kernel passes.
#include <cuda_runtime.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "kernels/cuda/device_buffer.h"
#include "tests/gpusim/gpusim_test_support.h"

namespace gpusim::testing {
namespace {

using xmlt::kernels::cuda::DeviceBuffer;
using ::testing::HasSubstr;

constexpr unsigned kThreads = 64;

class InitcheckTest : public AccessChecksTest {};

// Only the first `writers` threads write their word; then every thread reads its own.
__global__ void PartlyWrittenSharedKernel(unsigned writers, int* out) {
  __shared__ int slot[kThreads];
  if (threadIdx.x < writers) slot[threadIdx.x] = 1;
  __syncthreads();
  out[threadIdx.x] = slot[threadIdx.x];
}

TEST_F(InitcheckTest, AReadOfSharedMemoryNoThreadWroteFails) {
  DeviceBuffer<int> out(kThreads);
  XMLT_LAUNCH(PartlyWrittenSharedKernel, 1, kThreads, 0, nullptr)(40u, out.data());
  const std::string why = LaunchFailure();
  EXPECT_THAT(why, HasSubstr("kernel PartlyWrittenSharedKernel: initcheck: thread "));
  EXPECT_THAT(why, HasSubstr("PartlyWrittenSharedKernel(unsigned int, int*)::slot"));
  EXPECT_THAT(why, HasSubstr("at tests/gpusim/initcheck_test.cc:"));
  EXPECT_THAT(why, HasSubstr("which no thread of the block has written"));
}

TEST_F(InitcheckTest, SharedMemoryEveryThreadWrotePasses) {
  DeviceBuffer<int> out(kThreads);
  XMLT_LAUNCH(PartlyWrittenSharedKernel, 1, kThreads, 0, nullptr)(kThreads, out.data());
  EXPECT_EQ(LaunchFailure(), "");
}

// Block 0 writes the word, later blocks only read it: what a block finds in shared memory at its
// start is garbage on a card, even if an earlier block of the same kernel left it there.
__global__ void FirstBlockWritesKernel(int* out) {
  __shared__ int value;
  if (blockIdx.x == 0 && threadIdx.x == 0) value = 7;
  __syncthreads();
  if (threadIdx.x == 0) out[blockIdx.x] = value;
}

TEST_F(InitcheckTest, SharedMemoryAnEarlierBlockWroteIsUninitialized) {
  DeviceBuffer<int> out(2);
  XMLT_LAUNCH(FirstBlockWritesKernel, 2, kThreads, 0, nullptr)(out.data());
  const std::string why = LaunchFailure();
  EXPECT_THAT(why, HasSubstr("initcheck: thread 0 of block (1,0,0) reads shared word 0 (byte 0) of "));
}

__global__ void DynamicSharedKernel(unsigned writers, int* out) {
  XMLT_DYNAMIC_SHARED(int, slot);
  if (threadIdx.x < writers) slot[threadIdx.x] = 1;
  __syncthreads();
  out[threadIdx.x] = slot[kThreads - 1 - threadIdx.x];
}

TEST_F(InitcheckTest, DynamicSharedMemoryIsCheckedToo) {
  DeviceBuffer<int> out(kThreads);
  XMLT_LAUNCH(DynamicSharedKernel, 1, kThreads, kThreads * sizeof(int), nullptr)(kThreads - 1, out.data());
  EXPECT_THAT(LaunchFailure(), HasSubstr("reads dynamic shared memory word 63 (byte 252)"));
  SimTest::Reset();
  DeviceBuffer<int> all(kThreads);
  XMLT_LAUNCH(DynamicSharedKernel, 1, kThreads, kThreads * sizeof(int), nullptr)(kThreads, all.data());
  EXPECT_EQ(LaunchFailure(), "");
}

__global__ void CopyKernel(const float* in, float* out, unsigned n) {
  const unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = in[i];
}

TEST_F(InitcheckTest, DeviceMemoryNothingWroteFailsWithItsWord) {
  const unsigned n = 100;
  DeviceBuffer<float> in(n), out(n);
  std::vector<float> half(n / 2, 1.0f);
  cudaMemcpy(in.data(), half.data(), half.size() * sizeof(float), cudaMemcpyHostToDevice);
  XMLT_LAUNCH(CopyKernel, 2, kThreads, 0, nullptr)(in.data(), out.data(), n);
  const std::string why = LaunchFailure();
  EXPECT_THAT(why, HasSubstr("kernel CopyKernel: initcheck: "));
  EXPECT_THAT(why, HasSubstr("reads device memory word 50 (byte 200) of a 400-byte allocation on GPU 0"));
  EXPECT_THAT(why, HasSubstr("which nothing has written since it was allocated"));
}

TEST_F(InitcheckTest, CopiesMemsetsAndKernelsInitializeDeviceMemory) {
  const unsigned n = 100;
  DeviceBuffer<float> in = DeviceBuffer<float>::FromHost(std::vector<float>(n, 2.0f));
  DeviceBuffer<float> zeroed(n), middle(n), out(n);
  cudaMemset(zeroed.data(), 0, n * sizeof(float));
  XMLT_LAUNCH(CopyKernel, 2, kThreads, 0, nullptr)(in.data(), middle.data(), n);
  XMLT_LAUNCH(CopyKernel, 2, kThreads, 0, nullptr)(middle.data(), out.data(), n);
  XMLT_LAUNCH(CopyKernel, 2, kThreads, 0, nullptr)(zeroed.data(), in.data(), n);
  ASSERT_EQ(LaunchFailure(), "");
  EXPECT_EQ(out.ToHost()[n - 1], 2.0f);
}

}  // namespace
}  // namespace gpusim::testing
