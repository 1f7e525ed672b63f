// Device memory apart from host memory: copies really copy, pointers of the wrong kind are
// refused, allocations count against the set memory size, devices come from the environment.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <vector>

#include "gpusim/device_memory.h"
#include "gpusim/devices.h"
#include "kernels/cuda/device_buffer.h"
#include "tests/gpusim/gpusim_test_support.h"

namespace gpusim::testing {
namespace {

using xmlt::kernels::cuda::DeviceBuffer;
using xmlt::kernels::cuda::PinnedBuffer;

__global__ void AddOneKernel(float* values, unsigned n) {
  const unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) values[i] += 1.0f;
}

TEST_F(SimTest, DeviceMemoryIsACopyNotTheHostBuffer) {
  std::vector<float> host = {1, 2, 3};
  DeviceBuffer<float> device = DeviceBuffer<float>::FromHost(host);
  EXPECT_NE(static_cast<const void*>(device.data()), static_cast<const void*>(host.data()));
  host[0] = 100;  // the device keeps what was copied
  XMLT_LAUNCH(AddOneKernel, 1, 32, 0, nullptr)(device.data(), 3u);
  EXPECT_EQ(device.ToHost(), (std::vector<float>{2, 3, 4}));
  EXPECT_EQ(host[0], 100);
}

TEST_F(SimTest, AHostPointerHandedToAKernelLosesTheContext) {
  std::vector<float> host(32, 1.0f);
  XMLT_LAUNCH(AddOneKernel, 1, 32, 0, nullptr)(host.data(), 32u);
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);  // the launch itself is accepted, as on a card
  EXPECT_EQ(cudaDeviceSynchronize(), cudaErrorIllegalAddress);
  EXPECT_EQ(host[0], 1.0f) << "the kernel ran on host memory";
  void* p = nullptr;
  EXPECT_EQ(cudaMalloc(&p, 16), cudaErrorIllegalAddress);  // sticky
  cudaSetDevice(1);
  EXPECT_EQ(cudaMalloc(&p, 16), cudaSuccess) << "another GPU is not affected";
  EXPECT_EQ(cudaFree(p), cudaSuccess);
}

TEST_F(SimTest, AnotherGpusMemoryHandedToAKernelLosesTheContext) {
  cudaSetDevice(1);
  DeviceBuffer<float> other(32);
  cudaSetDevice(0);
  XMLT_LAUNCH(AddOneKernel, 1, 32, 0, nullptr)(other.data(), 32u);
  EXPECT_EQ(cudaDeviceSynchronize(), cudaErrorIllegalAddress);
}

TEST_F(SimTest, PinnedHostMemoryIsReachableFromKernels) {
  PinnedBuffer<float> pinned(32);
  for (int i = 0; i < 32; ++i) pinned.data()[i] = float(i);
  XMLT_LAUNCH(AddOneKernel, 1, 32, 0, nullptr)(pinned.data(), 32u);
  EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  EXPECT_EQ(pinned.data()[31], 32.0f);
}

TEST_F(SimTest, CopiesOfTheWrongKindAreRefused) {
  std::vector<float> host(8, 0.0f), other(8, 0.0f);
  DeviceBuffer<float> device(8);
  EXPECT_EQ(cudaMemcpy(host.data(), other.data(), 32, cudaMemcpyHostToDevice), cudaErrorInvalidValue);
  EXPECT_EQ(cudaMemcpy(device.data(), host.data(), 32, cudaMemcpyDeviceToHost), cudaErrorInvalidValue);
  EXPECT_EQ(cudaMemcpy(device.data(), host.data(), 36, cudaMemcpyHostToDevice), cudaErrorInvalidValue)
      << "past the end of the allocation";
  EXPECT_EQ(cudaMemcpy(device.data() + 1, host.data(), 28, cudaMemcpyHostToDevice), cudaSuccess);
  EXPECT_EQ(cudaMemcpy(host.data(), device.data(), 32, cudaMemcpyDefault), cudaSuccess);
  EXPECT_EQ(cudaMemsetAsync(host.data(), 0, 32, nullptr), cudaErrorInvalidValue);
  EXPECT_EQ(cudaFree(host.data()), cudaErrorInvalidValue);
  EXPECT_EQ(cudaFreeHost(host.data()), cudaErrorInvalidValue);
  EXPECT_EQ(cudaGetLastError(), cudaErrorInvalidValue);
  EXPECT_EQ(cudaGetLastError(), cudaSuccess) << "refusals are not sticky";
}

TEST_F(SimTest, NewDeviceMemoryIsGarbageNotZero) {
  DeviceBuffer<unsigned> device(4);
  for (unsigned v : device.ToHost()) EXPECT_EQ(v, 0xffffffffu);
}

TEST_F(SimTest, AllocationsCountAgainstTheGpusMemory) {
  size_t free0 = 0, total = 0;
  ASSERT_EQ(cudaMemGetInfo(&free0, &total), cudaSuccess);
  EXPECT_EQ(free0, total);
  void* p = nullptr;
  EXPECT_EQ(cudaMalloc(&p, total + 1), cudaErrorMemoryAllocation);
  EXPECT_EQ(cudaGetLastError(), cudaErrorMemoryAllocation);
  EXPECT_EQ(cudaMalloc(&p, 12345), cudaSuccess);
  size_t free1 = 0;
  ASSERT_EQ(cudaMemGetInfo(&free1, &total), cudaSuccess);
  EXPECT_EQ(free1, free0 - 12345);
  EXPECT_EQ(cudaMalloc(&p, free1 + 1), cudaErrorMemoryAllocation) << "one byte more than is left";
  EXPECT_EQ(cudaFree(Locate(p).base == 0 ? nullptr : p), cudaSuccess);
}

// Run in a child process with XMLT_SIM_GPUS=3 and XMLT_SIM_GPU_MEMORY=1M.
bool ThreeGpusOfOneMebibyte() {
  int count = 0;
  size_t free = 0, total = 0;
  void* p = nullptr;
  cudaSetDevice(2);
  return cudaGetDeviceCount(&count) == cudaSuccess && count == 3 && cudaMemGetInfo(&free, &total) == cudaSuccess &&
         total == (1u << 20) && cudaMalloc(&p, (1u << 20) + 1) == cudaErrorMemoryAllocation &&
         cudaMalloc(&p, 1u << 20) == cudaSuccess && cudaSetDevice(3) == cudaErrorInvalidDevice;
}

TEST(SimulatedGpus, CountAndMemoryComeFromTheEnvironment) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  // A child process of its own: the devices are set up once per process, at the first call.
  setenv("XMLT_SIM_GPUS", "3", 1);
  setenv("XMLT_SIM_GPU_MEMORY", "1M", 1);
  EXPECT_EXIT(std::_Exit(ThreeGpusOfOneMebibyte() ? 0 : 1), ::testing::ExitedWithCode(0), "");
  setenv("XMLT_SIM_GPUS", "0", 1);
  EXPECT_EXIT(
      {
        int count = -1;
        std::_Exit(cudaGetDeviceCount(&count) == cudaErrorNoDevice && count == 0 ? 0 : 1);
      },
      ::testing::ExitedWithCode(0), "");
  setenv("XMLT_SIM_GPU_MEMORY", "16 gigabytes", 1);
  EXPECT_EXIT(
      {
        int count = 0;
        cudaGetDeviceCount(&count);
        std::_Exit(0);
      },
      ::testing::ExitedWithCode(2), "XMLT_SIM_GPU_MEMORY='16 gigabytes' is not a size");
  unsetenv("XMLT_SIM_GPUS");
  unsetenv("XMLT_SIM_GPU_MEMORY");
}

TEST(ParseByteSize, TakesBinarySuffixes) {
  uint64_t bytes = 0;
  EXPECT_TRUE(ParseByteSize("16G", &bytes));
  EXPECT_EQ(bytes, uint64_t(16) << 30);
  EXPECT_TRUE(ParseByteSize("512MiB", &bytes));
  EXPECT_EQ(bytes, uint64_t(512) << 20);
  EXPECT_TRUE(ParseByteSize("4k", &bytes));
  EXPECT_EQ(bytes, 4096u);
  EXPECT_TRUE(ParseByteSize("1000", &bytes));
  EXPECT_EQ(bytes, 1000u);
  EXPECT_FALSE(ParseByteSize("", &bytes));
  EXPECT_FALSE(ParseByteSize("G", &bytes));
  EXPECT_FALSE(ParseByteSize("16X", &bytes));
  EXPECT_FALSE(ParseByteSize("16GB2", &bytes));
  EXPECT_FALSE(ParseByteSize("99999999999T", &bytes));
}

}  // namespace
}  // namespace gpusim::testing
