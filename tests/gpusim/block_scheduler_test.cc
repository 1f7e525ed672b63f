// Kernels on simulated threads: with racecheck off, a missing __syncthreads still changes the
// result on every run in the default turn order; shared memory (static and dynamic) belongs to its
// block, warp exchanges, atomics, the default and the seeded turn orders.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <numeric>
#include <optional>
#include <set>
#include <vector>

#include "gpusim/turn_orders.h"
#include "kernels/cuda/device_buffer.h"
#include "tests/gpusim/gpusim_test_support.h"

namespace gpusim::testing {
namespace {

using xmlt::kernels::cuda::DeviceBuffer;

constexpr unsigned kThreads = 64;

// Each thread publishes a value in shared memory and reads its neighbour's: correct only if the
// barrier separates the writes from the reads.
template <bool kBarrier>
__global__ void NeighbourKernel(int* out) {
  __shared__ int slot[kThreads];
  const unsigned t = threadIdx.x;
  slot[t] = int(blockIdx.x * 1000 + t);
  if (kBarrier) __syncthreads();
  out[blockIdx.x * kThreads + t] = slot[(t + 1) % kThreads];
}

// Thread 0 writes, every thread reads: one block only.
template <bool kBarrier>
__global__ void BroadcastKernel(int value, int* out) {
  __shared__ int shared_value;
  if (threadIdx.x == 0) shared_value = value;
  if (kBarrier) __syncthreads();
  out[threadIdx.x] = shared_value;
}

// Every thread writes, thread 0 sums: one block only.
template <bool kBarrier>
__global__ void GatherKernel(int base, int* out) {
  __shared__ int values[kThreads];
  values[threadIdx.x] = base + int(threadIdx.x);
  if (kBarrier) __syncthreads();
  if (threadIdx.x == 0) {
    int sum = 0;
    for (unsigned i = 0; i < kThreads; ++i) sum += values[i];
    *out = sum;
  }
}

template <class Kernel>
std::vector<int> RunNeighbour(Kernel kernel, unsigned blocks) {
  DeviceBuffer<int> out(blocks * kThreads);
  XMLT_LAUNCH(kernel, blocks, kThreads, 0, nullptr)(out.data());
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
  EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  return out.ToHost();
}

std::vector<int> ExpectedNeighbours(unsigned blocks) {
  std::vector<int> expected(blocks * kThreads);
  for (unsigned b = 0; b < blocks; ++b)
    for (unsigned t = 0; t < kThreads; ++t) expected[b * kThreads + t] = int(b * 1000 + (t + 1) % kThreads);
  return expected;
}

TEST_F(SimTest, TheBarrierSeparatesWritesFromReads) {
  EXPECT_EQ(RunNeighbour(NeighbourKernel<true>, 4), ExpectedNeighbours(4));
}

// What the default order is for: without racecheck (XMLT_SIM_CHECKS=0, a sanitized build), a
// missing barrier still shows as a wrong result.
TEST_F(SimTest, AMissingBarrierGivesAWrongResultOnEveryRun) {
  ScopedAccessChecks off(false);
  ScopedTurnOrder order(std::nullopt);
  const std::vector<int> expected = ExpectedNeighbours(4);
  for (int run = 0; run < 5; ++run) {
    const std::vector<int> got = RunNeighbour(NeighbourKernel<false>, 4);
    int wrong_blocks = 0;
    for (unsigned b = 0; b < 4; ++b)
      wrong_blocks += !std::equal(got.begin() + b * kThreads, got.begin() + (b + 1) * kThreads,
                                  expected.begin() + b * kThreads);
    EXPECT_GE(wrong_blocks, 2) << "run " << run;  // every block of one parity at least
  }
}

// Static shared memory keeps what the previous block left in it (as a card's may), so each run
// uses new values: a read before the write then sees the previous run's.
TEST_F(SimTest, AMissingBarrierFailsInASingleBlockBothWays) {
  ScopedAccessChecks off(false);
  ScopedTurnOrder order(std::nullopt);
  DeviceBuffer<int> out(kThreads);
  const auto sum_from = [](int base) { return int(kThreads) * base + int(kThreads * (kThreads - 1) / 2); };
  for (int run = 0; run < 3; ++run) {
    XMLT_LAUNCH(BroadcastKernel<false>, 1, kThreads, 0, nullptr)(7 + run, out.data());
    const std::vector<int> broadcast = out.ToHost();
    EXPECT_NE(std::count(broadcast.begin(), broadcast.end(), 7 + run), int(kThreads)) << "thread 0 wrote first";
    XMLT_LAUNCH(GatherKernel<false>, 1, kThreads, 0, nullptr)(10 * run, out.data());
    EXPECT_NE(out.ToHost()[0], sum_from(10 * run)) << "thread 0 summed last";
  }
  for (int run = 0; run < 2; ++run) {
    XMLT_LAUNCH(BroadcastKernel<true>, 1, kThreads, 0, nullptr)(7, out.data());
    const std::vector<int> broadcast = out.ToHost();
    EXPECT_EQ(std::count(broadcast.begin(), broadcast.end(), 7), int(kThreads));
    XMLT_LAUNCH(GatherKernel<true>, 1, kThreads, 0, nullptr)(3, out.data());
    EXPECT_EQ(out.ToHost()[0], sum_from(3));
  }
}

TEST(TurnOrder, EveryPairRunsBothWaysInTwoNeighbouringBlocksAndThreadZeroIsInTheMiddle) {
  for (unsigned threads : {1u, 2u, 32u, 33u, 256u}) {
    std::vector<unsigned> even(threads), odd(threads);
    for (unsigned i = 0; i < threads; ++i) {
      even[i] = TurnOrder(i, threads, 0);
      odd[i] = TurnOrder(i, threads, 1);
    }
    EXPECT_EQ(std::set<unsigned>(even.begin(), even.end()).size(), threads);
    std::vector<unsigned> reversed(odd.rbegin(), odd.rend());
    EXPECT_EQ(even, reversed);
    if (threads > 2) {
      EXPECT_NE(even.front(), 0u);
      EXPECT_NE(even.back(), 0u);
    }
  }
}

// Each thread takes a ticket when its turn comes: the tickets are the block's turn order.
__global__ void TicketKernel(unsigned* next, unsigned* ticket) {
  ticket[blockIdx.x * blockDim.x + threadIdx.x] = atomicAdd(next + blockIdx.x, 1u);
}

std::vector<unsigned> Tickets(std::optional<uint64_t> seed, unsigned blocks) {
  ScopedTurnOrder order(seed);
  DeviceBuffer<unsigned> next(blocks), ticket(blocks * kThreads);
  XMLT_CUDA_CHECK(cudaMemset(next.data(), 0, blocks * sizeof(unsigned)));
  XMLT_LAUNCH(TicketKernel, blocks, kThreads, 0, nullptr)(next.data(), ticket.data());
  return ticket.ToHost();
}

TEST_F(SimTest, ASeededTurnOrderIsReproducibleAndDiffersBySeedAndBlock) {
  const std::vector<unsigned> seeded = Tickets(42, 2);
  EXPECT_EQ(Tickets(42, 2), seeded);
  EXPECT_NE(Tickets(43, 2), seeded);
  EXPECT_NE(Tickets(std::nullopt, 2), seeded);
  const std::vector<unsigned> block0(seeded.begin(), seeded.begin() + kThreads);
  const std::vector<unsigned> block1(seeded.begin() + kThreads, seeded.end());
  EXPECT_NE(block0, block1);
  for (const std::vector<unsigned>* block : {&block0, &block1})  // each a permutation
    EXPECT_EQ(std::set<unsigned>(block->begin(), block->end()).size(), size_t(kThreads));
}

// Static shared memory is the block's own: each block's thread 0 writes its block index.
__global__ void StaticSharedKernel(unsigned* out) {
  __shared__ unsigned block_value;
  if (threadIdx.x == 0) block_value = blockIdx.x + 100;
  __syncthreads();
  out[blockIdx.x * blockDim.x + threadIdx.x] = block_value;
}

TEST_F(SimTest, StaticSharedMemoryBelongsToItsBlock) {
  DeviceBuffer<unsigned> out(8 * 32);
  XMLT_LAUNCH(StaticSharedKernel, 8, 32, 0, nullptr)(out.data());
  const std::vector<unsigned> got = out.ToHost();
  for (unsigned i = 0; i < got.size(); ++i) ASSERT_EQ(got[i], i / 32 + 100) << i;
}

// Dynamic shared memory of the size the launch gives: reversed through it.
__global__ void DynamicSharedKernel(const float* in, float* out) {
  XMLT_DYNAMIC_SHARED(float, buffer);
  const unsigned t = threadIdx.x, n = blockDim.x;
  buffer[t] = in[blockIdx.x * n + t];
  __syncthreads();
  out[blockIdx.x * n + t] = buffer[n - 1 - t];
}

TEST_F(SimTest, DynamicSharedMemoryHoldsTheLaunchsBytes) {
  std::vector<float> host(3 * 96);
  std::iota(host.begin(), host.end(), 0.0f);
  DeviceBuffer<float> in = DeviceBuffer<float>::FromHost(host), out(host.size());
  XMLT_LAUNCH(DynamicSharedKernel, 3, 96, 96 * sizeof(float), nullptr)(in.data(), out.data());
  const std::vector<float> got = out.ToHost();
  for (unsigned b = 0; b < 3; ++b)
    for (unsigned t = 0; t < 96; ++t) ASSERT_EQ(got[b * 96 + t], host[b * 96 + 95 - t]);
}

// A butterfly over a warp leaves the sum in every lane; shfl_down leaves it in lane 0.
__global__ void WarpSumKernel(const int* in, int* butterfly, int* down) {
  const unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  int x = in[i], y = in[i];
  for (int offset = 16; offset > 0; offset /= 2) {
    x += __shfl_xor_sync(0xffffffffu, x, offset);
    y += __shfl_down_sync(0xffffffffu, y, unsigned(offset));
  }
  butterfly[i] = x;
  down[i] = y;
}

TEST_F(SimTest, WarpShufflesExchangeWithinEachWarp) {
  std::vector<int> host(2 * 64);
  for (size_t i = 0; i < host.size(); ++i) host[i] = int(i * i % 97);
  DeviceBuffer<int> in = DeviceBuffer<int>::FromHost(host), butterfly(host.size()), down(host.size());
  XMLT_LAUNCH(WarpSumKernel, 2, 64, 0, nullptr)(in.data(), butterfly.data(), down.data());
  const std::vector<int> x = butterfly.ToHost(), y = down.ToHost();
  for (size_t warp = 0; warp < host.size() / 32; ++warp) {
    const int sum = std::accumulate(host.begin() + warp * 32, host.begin() + (warp + 1) * 32, 0);
    for (size_t lane = 0; lane < 32; ++lane) ASSERT_EQ(x[warp * 32 + lane], sum) << warp << " " << lane;
    ASSERT_EQ(y[warp * 32], sum) << warp;
  }
}

// Half a warp leaves before the other half shuffles with it: undefined on a card, a failed
// launch (sticky) here.
__global__ void ExitedLaneKernel(int* out) {
  if (threadIdx.x >= 16) return;
  out[threadIdx.x] = __shfl_xor_sync(0xffffffffu, int(threadIdx.x), 16);
}

TEST_F(SimTest, AShuffleWithAnExitedLaneFailsTheLaunch) {
  DeviceBuffer<int> out(32);
  XMLT_LAUNCH(ExitedLaneKernel, 1, 32, 0, nullptr)(out.data());
  EXPECT_EQ(cudaDeviceSynchronize(), cudaErrorLaunchFailure);
}

// Half a warp waits at a barrier, the other half in a warp exchange that names the first half:
// neither ever opens (a hang on a card).
__global__ void DivergentBarrierKernel(int* out) {
  if (threadIdx.x < 16) {
    __syncthreads();
  } else {
    out[threadIdx.x] = __shfl_xor_sync(0xffffffffu, 1, 1);
  }
}

TEST_F(SimTest, ADivergentBarrierIsADeadlockNotAHang) {
  DeviceBuffer<int> out(64);
  XMLT_LAUNCH(DivergentBarrierKernel, 1, 64, 0, nullptr)(out.data());
  EXPECT_EQ(cudaDeviceSynchronize(), cudaErrorLaunchFailure);
}

__global__ void CountKernel(unsigned* counter, float* total) {
  atomicAdd(counter, 1u);
  atomicAdd(total, 0.5f);
}

TEST_F(SimTest, AtomicsCountEveryThread) {
  DeviceBuffer<unsigned> counter(1);
  DeviceBuffer<float> total(1);
  XMLT_CUDA_CHECK(cudaMemset(counter.data(), 0, sizeof(unsigned)));
  XMLT_CUDA_CHECK(cudaMemset(total.data(), 0, sizeof(float)));
  XMLT_LAUNCH(CountKernel, 7, 96, 0, nullptr)(counter.data(), total.data());
  EXPECT_EQ(counter.ToHost()[0], 7u * 96u);
  EXPECT_EQ(total.ToHost()[0], 7 * 96 * 0.5f);
}

__global__ void IndexKernel(uint3* out) {
  const unsigned block = (blockIdx.z * gridDim.y + blockIdx.y) * gridDim.x + blockIdx.x;
  const unsigned thread = (threadIdx.z * blockDim.y + threadIdx.y) * blockDim.x + threadIdx.x;
  out[2 * (block * blockDim.x * blockDim.y * blockDim.z + thread)] = threadIdx;
  out[2 * (block * blockDim.x * blockDim.y * blockDim.z + thread) + 1] = blockIdx;
}

TEST_F(SimTest, EveryThreadOfA3dGridSeesItsOwnIndices) {
  const dim3 grid(3, 2, 2), block(4, 3, 2);
  const unsigned total = 12 * 24;
  DeviceBuffer<uint3> out(2 * total);
  XMLT_LAUNCH(IndexKernel, grid, block, 0, nullptr)(out.data());
  const std::vector<uint3> got = out.ToHost();
  unsigned i = 0;
  for (unsigned bz = 0; bz < 2; ++bz)
    for (unsigned by = 0; by < 2; ++by)
      for (unsigned bx = 0; bx < 3; ++bx)
        for (unsigned tz = 0; tz < 2; ++tz)
          for (unsigned ty = 0; ty < 3; ++ty)
            for (unsigned tx = 0; tx < 4; ++tx, ++i) {
              ASSERT_TRUE(got[2 * i].x == tx && got[2 * i].y == ty && got[2 * i].z == tz) << i;
              ASSERT_TRUE(got[2 * i + 1].x == bx && got[2 * i + 1].y == by && got[2 * i + 1].z == bz) << i;
            }
}

TEST_F(SimTest, ABadLaunchConfigurationIsTheLaunchsError) {
  DeviceBuffer<int> out(1);
  XMLT_LAUNCH(ExitedLaneKernel, 1, 2048, 0, nullptr)(out.data());
  EXPECT_EQ(cudaGetLastError(), cudaErrorInvalidConfiguration);
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);  // not sticky
  DeviceBuffer<float> floats(32);
  XMLT_LAUNCH(DynamicSharedKernel, 1, 32, 64 << 10, nullptr)(floats.data(), floats.data());
  EXPECT_EQ(cudaGetLastError(), cudaErrorInvalidValue);
}

}  // namespace
}  // namespace gpusim::testing
