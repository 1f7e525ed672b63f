// The simulated CUB: BlockReduce across a block, DeviceRadixSort::SortPairs (stable, over the
// asked bits) with its temp-storage query.
#include <cub/block/block_reduce.cuh>
#include <cub/device/device_radix_sort.cuh>
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <random>
#include <vector>

#include "kernels/cuda/device_buffer.h"
#include "tests/gpusim/gpusim_test_support.h"

namespace gpusim::testing {
namespace {

using xmlt::kernels::cuda::DeviceBuffer;

constexpr int kThreads = 128;

__global__ void BlockSumKernel(const double* in, double* out) {
  using Reduce = cub::BlockReduce<double, kThreads>;
  __shared__ typename Reduce::TempStorage temp;
  const double total = Reduce(temp).Sum(in[blockIdx.x * kThreads + threadIdx.x]);
  if (threadIdx.x == 0) out[blockIdx.x] = total;
}

TEST_F(SimTest, BlockReduceSumsEveryThreadsValue) {
  std::vector<double> host(3 * kThreads);
  for (size_t i = 0; i < host.size(); ++i) host[i] = double(i % 17) - 3;
  DeviceBuffer<double> in = DeviceBuffer<double>::FromHost(host), out(3);
  XMLT_LAUNCH(BlockSumKernel, 3, kThreads, 0, nullptr)(in.data(), out.data());
  const std::vector<double> got = out.ToHost();
  for (int b = 0; b < 3; ++b)
    EXPECT_EQ(got[b], std::accumulate(host.begin() + b * kThreads, host.begin() + (b + 1) * kThreads, 0.0));
}

TEST_F(SimTest, RadixSortPairsIsStableOverTheAskedBits) {
  const int n = 1000, bits = 10;
  std::mt19937 rng(5);
  std::vector<uint32_t> keys(n), values(n);
  for (int i = 0; i < n; ++i) {
    keys[i] = rng() % 700;  // many equal keys: stability shows
    values[i] = uint32_t(i);
  }
  DeviceBuffer<uint32_t> keys_in = DeviceBuffer<uint32_t>::FromHost(keys), keys_out(n),
                         values_in = DeviceBuffer<uint32_t>::FromHost(values), values_out(n);
  size_t bytes = 0;
  ASSERT_EQ(cub::DeviceRadixSort::SortPairs(nullptr, bytes, keys_in.data(), keys_out.data(), values_in.data(),
                                            values_out.data(), n, 0, bits),
            cudaSuccess);
  ASSERT_GT(bytes, 0u);
  DeviceBuffer<unsigned char> temp(bytes);
  size_t too_few = bytes - 1;
  EXPECT_EQ(cub::DeviceRadixSort::SortPairs(temp.data(), too_few, keys_in.data(), keys_out.data(), values_in.data(),
                                            values_out.data(), n, 0, bits),
            cudaErrorInvalidValue);
  xmlt::kernels::cuda::Stream stream;
  ASSERT_EQ(cub::DeviceRadixSort::SortPairs(temp.data(), bytes, keys_in.data(), keys_out.data(), values_in.data(),
                                            values_out.data(), n, 0, bits, stream.get()),
            cudaSuccess);
  stream.Synchronize();
  std::vector<uint32_t> order(n);
  std::iota(order.begin(), order.end(), 0u);
  std::stable_sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) { return keys[a] < keys[b]; });
  const std::vector<uint32_t> sorted_keys = keys_out.ToHost(), sorted_values = values_out.ToHost();
  for (int i = 0; i < n; ++i) {
    ASSERT_EQ(sorted_values[i], order[i]) << i;
    ASSERT_EQ(sorted_keys[i], keys[order[i]]) << i;
  }
}

TEST_F(SimTest, RadixSortOfHostMemoryFaults) {
  std::vector<uint32_t> keys = {3, 1, 2}, values = {0, 1, 2};
  DeviceBuffer<uint32_t> keys_out(3), values_out(3);
  size_t bytes = 0;
  cub::DeviceRadixSort::SortPairs(nullptr, bytes, keys.data(), keys_out.data(), values.data(), values_out.data(), 3);
  DeviceBuffer<unsigned char> temp(bytes);
  EXPECT_EQ(cub::DeviceRadixSort::SortPairs(temp.data(), bytes, keys.data(), keys_out.data(), values.data(),
                                            values_out.data(), 3),
            cudaSuccess);
  EXPECT_EQ(cudaDeviceSynchronize(), cudaErrorIllegalAddress);
}

}  // namespace
}  // namespace gpusim::testing
