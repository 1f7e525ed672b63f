// Injected faults: a sticky error at the k-th launch loses that GPU's context (the backend's
// check macro throws ContextLost) while the other GPU goes on; out of memory at the k-th
// allocation is an ordinary error. Both also from the environment.
#include <cublas_v2.h>
#include <cub/device/device_radix_sort.cuh>
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <vector>

#include "kernels/context_lost.h"
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/device_buffer.h"
#include "tests/gpusim/gpusim_test_support.h"

namespace gpusim::testing {
namespace {

using xmlt::kernels::cuda::DeviceBuffer;

__global__ void IncrementKernel(int* value) { *value += 1; }

TEST_F(SimTest, AStickyErrorAtTheKthLaunchLosesTheContext) {
  DeviceBuffer<int> value = DeviceBuffer<int>::FromHost({0});
  InjectStickyErrorAtLaunch(3);
  XMLT_LAUNCH(IncrementKernel, 1, 1, 0, nullptr)(value.data());
  XMLT_LAUNCH(IncrementKernel, 1, 1, 0, nullptr)(value.data());
  EXPECT_EQ(value.ToHost()[0], 2);
  XMLT_LAUNCH(IncrementKernel, 1, 1, 0, nullptr)(value.data());
  EXPECT_EQ(cudaGetLastError(), cudaSuccess) << "surfaces when the work runs, not at the launch";
  EXPECT_THROW(XMLT_CUDA_CHECK(cudaDeviceSynchronize()), xmlt::kernels::ContextLost);
  EXPECT_EQ(cudaGetLastError(), cudaErrorIllegalAddress);
  EXPECT_EQ(cudaGetLastError(), cudaErrorIllegalAddress) << "sticky";
  void* p = nullptr;
  EXPECT_EQ(cudaMalloc(&p, 4), cudaErrorIllegalAddress);
  EXPECT_THROW(value.ToHost(), xmlt::kernels::ContextLost);
  cudaSetDevice(1);
  DeviceBuffer<int> other = DeviceBuffer<int>::FromHost({5});
  XMLT_LAUNCH(IncrementKernel, 1, 1, 0, nullptr)(other.data());
  EXPECT_EQ(other.ToHost()[0], 6) << "GPU 1 goes on";
}

// cuBLAS in a lost context fails its call (its kernels cannot launch); the backend's check macro
// takes that for the lost context it is, not for a plain cuBLAS error.
TEST_F(SimTest, ALostContextSurfacingInCublasIsContextLost) {
  xmlt::kernels::cuda::CublasHandle handle;
  DeviceBuffer<float> a = DeviceBuffer<float>::FromHost({1}), value(1);
  DeviceBuffer<unsigned> keys(4);
  size_t sort_bytes = 0;
  cub::DeviceRadixSort::SortPairs(nullptr, sort_bytes, keys.data(), keys.data() + 1, keys.data() + 2, keys.data() + 3,
                                  1, 0, 8);
  DeviceBuffer<unsigned char> temp(sort_bytes);
  InjectStickyErrorAtLaunch(1);
  XMLT_LAUNCH(IncrementKernel, 1, 1, 0, nullptr)(reinterpret_cast<int*>(value.data()));
  EXPECT_EQ(cudaDeviceSynchronize(), cudaErrorIllegalAddress);
  const float alpha = 1, beta = 0;
  EXPECT_EQ(cublasGemmEx(handle.get(), CUBLAS_OP_N, CUBLAS_OP_N, 1, 1, 1, &alpha, a.data(), CUDA_R_32F, 1, a.data(),
                         CUDA_R_32F, 1, &beta, value.data(), CUDA_R_32F, 1, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
            CUBLAS_STATUS_EXECUTION_FAILED);
  EXPECT_THROW(XMLT_CUBLAS_CHECK(cublasGemmEx(handle.get(), CUBLAS_OP_N, CUBLAS_OP_N, 1, 1, 1, &alpha, a.data(),
                                              CUDA_R_32F, 1, a.data(), CUDA_R_32F, 1, &beta, value.data(), CUDA_R_32F,
                                              1, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT)),
               xmlt::kernels::ContextLost);
  size_t bytes = sort_bytes;
  EXPECT_THROW(XMLT_CUDA_CHECK(cub::DeviceRadixSort::SortPairs(temp.data(), bytes, keys.data(), keys.data() + 1,
                                                               keys.data() + 2, keys.data() + 3, 1, 0, 8)),
               xmlt::kernels::ContextLost)
      << "CUB returns the sticky error itself";
}

TEST_F(SimTest, TheInjectedCodeAndGpuAreTheOnesAskedFor) {
  cudaSetDevice(1);
  DeviceBuffer<int> on1 = DeviceBuffer<int>::FromHost({0});
  cudaSetDevice(0);
  DeviceBuffer<int> on0 = DeviceBuffer<int>::FromHost({0});
  InjectStickyErrorAtLaunch(1, cudaErrorLaunchFailure, 1);
  XMLT_LAUNCH(IncrementKernel, 1, 1, 0, nullptr)(on0.data());  // GPU 0: not counted
  EXPECT_EQ(on0.ToHost()[0], 1);
  cudaSetDevice(1);
  XMLT_LAUNCH(IncrementKernel, 1, 1, 0, nullptr)(on1.data());
  EXPECT_EQ(cudaDeviceSynchronize(), cudaErrorLaunchFailure);
}

TEST_F(SimTest, OutOfMemoryAtTheKthAllocation) {
  InjectOutOfMemoryAtAllocation(2);
  void* a = nullptr;
  void* b = nullptr;
  void* c = nullptr;
  EXPECT_EQ(cudaMalloc(&a, 64), cudaSuccess);
  EXPECT_EQ(cudaMalloc(&b, 64), cudaErrorMemoryAllocation);
  EXPECT_EQ(b, nullptr);
  EXPECT_EQ(cudaMalloc(&c, 64), cudaSuccess) << "not sticky";
  EXPECT_EQ(cudaGetLastError(), cudaErrorMemoryAllocation);
  cudaFree(a);
  cudaFree(c);
  InjectOutOfMemoryAtAllocation(1);
  try {
    DeviceBuffer<float> buffer(16);
    ADD_FAILURE() << "no exception";
  } catch (const xmlt::kernels::ContextLost&) {
    ADD_FAILURE() << "out of memory leaves the context usable";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("out of memory"), std::string::npos) << e.what();
  }
}

TEST(SimulatedFaults, ComeFromTheEnvironment) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  setenv("XMLT_SIM_FAULT_LAUNCH", "2:719@1", 1);
  setenv("XMLT_SIM_FAULT_ALLOC", "1@0", 1);
  EXPECT_EXIT(
      {
        void* p = nullptr;
        if (cudaMalloc(&p, 4) != cudaErrorMemoryAllocation) std::_Exit(3);
        cudaSetDevice(1);
        int* value = nullptr;
        if (cudaMalloc(reinterpret_cast<void**>(&value), 4) != cudaSuccess) std::_Exit(4);
        if (cudaMemset(value, 0, 4) != cudaSuccess) std::_Exit(7);
        XMLT_LAUNCH(IncrementKernel, 1, 1, 0, nullptr)(value);
        if (cudaDeviceSynchronize() != cudaSuccess) std::_Exit(5);
        XMLT_LAUNCH(IncrementKernel, 1, 1, 0, nullptr)(value);
        std::_Exit(cudaDeviceSynchronize() == cudaErrorLaunchFailure ? 0 : 6);
      },
      ::testing::ExitedWithCode(0), "");
  setenv("XMLT_SIM_FAULT_LAUNCH", "0", 1);
  EXPECT_EXIT(
      {
        void* p = nullptr;
        cudaMalloc(&p, 4);  // reads the fault settings
        std::_Exit(0);
      },
      ::testing::ExitedWithCode(2), "XMLT_SIM_FAULT_LAUNCH='0' is not");
  unsetenv("XMLT_SIM_FAULT_LAUNCH");
  unsetenv("XMLT_SIM_FAULT_ALLOC");
}

}  // namespace
}  // namespace gpusim::testing
