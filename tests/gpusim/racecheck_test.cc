// Racecheck: a hazard of each kind on shared and device memory fails the launch and names the
// kernel, both threads, the word and the source lines; the same kernels with their barrier (or
// __syncwarp) pass; shuffles, atomics and neighbouring bytes are no hazard.
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

class RacecheckTest : public AccessChecksTest {};

// Thread 40 writes word 5, thread 1 (another warp) reads it; in the default order thread 40 runs
// first (the order starts at thread 32).
template <bool kBarrier>
__global__ void ReadAfterWriteKernel(int* out) {
  __shared__ int slot[kThreads];
  slot[threadIdx.x] = int(threadIdx.x);
  __syncthreads();
  if (threadIdx.x == 40) slot[5] = 50;
  if (kBarrier) __syncthreads();
  if (threadIdx.x == 1) out[0] = slot[5];
}

TEST_F(RacecheckTest, AReadAfterAnotherThreadsWriteIsAHazard) {
  DeviceBuffer<int> out(1);
  XMLT_LAUNCH(ReadAfterWriteKernel<false>, 1, kThreads, 0, nullptr)(out.data());
  const std::string why = LaunchFailure();
  EXPECT_THAT(why, HasSubstr("kernel ReadAfterWriteKernel<false>: racecheck: read-after-write hazard"));
  EXPECT_THAT(why, HasSubstr("thread 1 of block (0,0,0) reads shared word 5 (byte 20) of "));
  EXPECT_THAT(why, HasSubstr("ReadAfterWriteKernel<false>(int*)::slot at tests/gpusim/racecheck_test.cc:"));
  EXPECT_THAT(why, HasSubstr("which thread 40 wrote at tests/gpusim/racecheck_test.cc:"));
  EXPECT_THAT(why, HasSubstr("(a __syncthreads is missing)"));
}

TEST_F(RacecheckTest, TheSameKernelWithItsBarrierPasses) {
  DeviceBuffer<int> out(1);
  XMLT_LAUNCH(ReadAfterWriteKernel<true>, 1, kThreads, 0, nullptr)(out.data());
  EXPECT_EQ(LaunchFailure(), "");
  EXPECT_EQ(out.ToHost()[0], 50);
}

// Threads 3 and 4 write word 7.
__global__ void WriteAfterWriteKernel(int* out) {
  __shared__ int slot[kThreads];
  if (threadIdx.x == 3 || threadIdx.x == 4) slot[7] = int(threadIdx.x);
  __syncthreads();
  if (threadIdx.x == 0) out[0] = slot[7];
}

TEST_F(RacecheckTest, TwoThreadsWritingOneWordIsAHazard) {
  DeviceBuffer<int> out(1);
  XMLT_LAUNCH(WriteAfterWriteKernel, 1, kThreads, 0, nullptr)(out.data());
  const std::string why = LaunchFailure();
  EXPECT_THAT(why, HasSubstr("racecheck: write-after-write hazard: thread 4 of block (0,0,0) writes shared word 7"));
  EXPECT_THAT(why, HasSubstr("which thread 3 wrote"));
}

// Each thread reads its right neighbour's word and then writes its own: without the second
// barrier, thread t's write follows thread t - 1's read of the same word.
template <bool kBarrier>
__global__ void WriteAfterReadKernel(int* out) {
  __shared__ int slot[kThreads];
  const unsigned t = threadIdx.x;
  slot[t] = int(t);
  __syncthreads();
  const int right = slot[(t + 1) % kThreads];
  if (kBarrier) __syncthreads();
  slot[t] = right;
  __syncthreads();
  out[t] = slot[t];
}

TEST_F(RacecheckTest, AWriteAfterAnotherThreadsReadIsAHazard) {
  DeviceBuffer<int> out(kThreads);
  XMLT_LAUNCH(WriteAfterReadKernel<false>, 1, kThreads, 0, nullptr)(out.data());
  const std::string why = LaunchFailure();
  // The default order starts at thread 32: it reads word 33, then thread 33 writes it.
  EXPECT_THAT(why, HasSubstr("racecheck: write-after-read hazard: thread 33 of block (0,0,0) writes shared word 33"));
  EXPECT_THAT(why, HasSubstr("which thread 32 read"));
}

TEST_F(RacecheckTest, WithTheSecondBarrierEveryThreadGetsItsNeighbours) {
  DeviceBuffer<int> out(kThreads);
  XMLT_LAUNCH(WriteAfterReadKernel<true>, 1, kThreads, 0, nullptr)(out.data());
  ASSERT_EQ(LaunchFailure(), "");
  const std::vector<int> got = out.ToHost();
  for (unsigned t = 0; t < kThreads; ++t) EXPECT_EQ(got[t], int((t + 1) % kThreads));
}

// Whatever the order, the missing barrier is found: by its read or by its write.
TEST_F(RacecheckTest, AMissingBarrierIsFoundUnderEveryTurnOrder) {
  for (uint64_t seed : {1u, 2u, 3u, 12345u}) {
    ScopedTurnOrder order(seed);
    SimTest::Reset();
    DeviceBuffer<int> out(1);
    XMLT_LAUNCH(ReadAfterWriteKernel<false>, 1, kThreads, 0, nullptr)(out.data());
    const std::string why = LaunchFailure();
    EXPECT_THAT(why, ::testing::AnyOf(HasSubstr("read-after-write hazard: thread 1 "),
                                      HasSubstr("write-after-read hazard: thread 40 ")))
        << "seed " << seed;
    EXPECT_THAT(why, HasSubstr("shared word 5")) << "seed " << seed;
    EXPECT_THAT(why, HasSubstr("turn order seed " + std::to_string(seed))) << "seed " << seed;
  }
}

// Lanes of one warp exchange words through shared memory: ordered only by __syncwarp.
template <bool kSyncWarp>
__global__ void WarpExchangeKernel(int* out) {
  __shared__ int slot[32];
  const unsigned lane = threadIdx.x;
  slot[lane] = 0;
  __syncthreads();
  slot[lane] = int(lane) * 10;
  if (kSyncWarp) __syncwarp();
  out[lane] = slot[lane ^ 1u];
}

TEST_F(RacecheckTest, AnExchangeInsideAWarpWithoutSyncwarpIsAHazard) {
  DeviceBuffer<int> out(32);
  XMLT_LAUNCH(WarpExchangeKernel<false>, 1, 32, 0, nullptr)(out.data());
  const std::string why = LaunchFailure();
  EXPECT_THAT(why, HasSubstr("racecheck: "));
  EXPECT_THAT(why, HasSubstr("(one warp: a __syncwarp or __syncthreads is missing)"));
}

TEST_F(RacecheckTest, SyncwarpOrdersAnExchangeInsideAWarp) {
  DeviceBuffer<int> out(32);
  XMLT_LAUNCH(WarpExchangeKernel<true>, 1, 32, 0, nullptr)(out.data());
  ASSERT_EQ(LaunchFailure(), "");
  const std::vector<int> got = out.ToHost();
  for (unsigned lane = 0; lane < 32; ++lane) EXPECT_EQ(got[lane], int(lane ^ 1u) * 10);
}

// A shuffle reduction, then lane 0 of each warp publishes through shared memory after a barrier.
__global__ void ShuffleReduceKernel(int* out) {
  __shared__ int per_warp[kThreads / 32];
  int x = int(threadIdx.x);
  for (int offset = 16; offset > 0; offset /= 2) x += __shfl_xor_sync(0xffffffffu, x, offset);
  if (threadIdx.x % 32 == 0) per_warp[threadIdx.x / 32] = x;
  __syncthreads();
  if (threadIdx.x == 0) out[0] = per_warp[0] + per_warp[1];
}

TEST_F(RacecheckTest, ShufflesAreNoHazard) {
  DeviceBuffer<int> out(1);
  XMLT_LAUNCH(ShuffleReduceKernel, 1, kThreads, 0, nullptr)(out.data());
  ASSERT_EQ(LaunchFailure(), "");
  EXPECT_EQ(out.ToHost()[0], int(kThreads * (kThreads - 1) / 2));
}

// Every thread adds into one shared word and one device word.
__global__ void AtomicCountKernel(unsigned* total) {
  __shared__ unsigned count;
  if (threadIdx.x == 0) count = 0;
  __syncthreads();
  atomicAdd(&count, 1u);
  atomicAdd(total, 1u);
  __syncthreads();
  if (threadIdx.x == 0) atomicAdd(total, count * 1000u);
}

TEST_F(RacecheckTest, AtomicsToOneWordAreNoHazard) {
  DeviceBuffer<unsigned> total(1);
  cudaMemset(total.data(), 0, sizeof(unsigned));
  XMLT_LAUNCH(AtomicCountKernel, 2, kThreads, 0, nullptr)(total.data());
  ASSERT_EQ(LaunchFailure(), "");
  EXPECT_EQ(total.ToHost()[0], 2 * kThreads + 2 * kThreads * 1000u);
}

// Each thread writes one byte: four threads share every word, but no byte.
__global__ void ByteKernel(unsigned char* out) {
  __shared__ unsigned char bytes[kThreads];
  bytes[threadIdx.x] = static_cast<unsigned char>(threadIdx.x);
  __syncthreads();
  out[threadIdx.x] = bytes[kThreads - 1 - threadIdx.x];
}

TEST_F(RacecheckTest, NeighbouringBytesOfDifferentThreadsAreNoHazard) {
  DeviceBuffer<unsigned char> out(kThreads);
  XMLT_LAUNCH(ByteKernel, 1, kThreads, 0, nullptr)(out.data());
  ASSERT_EQ(LaunchFailure(), "");
  EXPECT_EQ(out.ToHost()[0], kThreads - 1);
}

// Thread t writes device word t, then reads word t + 1 (another thread's) in the same interval.
// Device memory is checked from a block's first barrier on (access_checks.h), hence the first.
template <bool kBarrier>
__global__ void DeviceNeighbourKernel(int* data, int* out) {
  const unsigned t = threadIdx.x;
  __syncthreads();
  data[t] = int(t);
  if (kBarrier) __syncthreads();
  out[t] = data[(t + 1) % kThreads];
}

TEST_F(RacecheckTest, DeviceMemoryIsCheckedBetweenTheThreadsOfABlock) {
  {
    DeviceBuffer<int> data(kThreads), out(kThreads);
    cudaMemset(data.data(), 0, kThreads * sizeof(int));
    XMLT_LAUNCH(DeviceNeighbourKernel<false>, 1, kThreads, 0, nullptr)(data.data(), out.data());
    const std::string why = LaunchFailure();
    EXPECT_THAT(why, HasSubstr("kernel DeviceNeighbourKernel<false>: racecheck: "));
    EXPECT_THAT(why, HasSubstr("device memory word "));
    EXPECT_THAT(why, HasSubstr("of a 256-byte allocation on GPU 0"));
  }
  SimTest::Reset();
  DeviceBuffer<int> data(kThreads), out(kThreads);
  cudaMemset(data.data(), 0, kThreads * sizeof(int));
  XMLT_LAUNCH(DeviceNeighbourKernel<true>, 1, kThreads, 0, nullptr)(data.data(), out.data());
  ASSERT_EQ(LaunchFailure(), "");
  EXPECT_EQ(out.ToHost()[kThreads - 1], 0);
}

// Blocks run one after another here, so two blocks writing one device word are not reported (a
// card's racecheck does not look at device memory at all).
__global__ void EveryBlockWritesWordZeroKernel(int* out) {
  if (threadIdx.x == 0) out[0] = int(blockIdx.x);
}

TEST_F(RacecheckTest, DeviceMemoryIsNotCheckedBetweenBlocks) {
  DeviceBuffer<int> out(1);
  XMLT_LAUNCH(EveryBlockWritesWordZeroKernel, 4, kThreads, 0, nullptr)(out.data());
  EXPECT_EQ(LaunchFailure(), "");
}

TEST_F(RacecheckTest, TurnedOffItLetsTheHazardThrough) {
  ScopedAccessChecks off(false);
  DeviceBuffer<int> out(1);
  XMLT_LAUNCH(ReadAfterWriteKernel<false>, 1, kThreads, 0, nullptr)(out.data());
  EXPECT_EQ(LaunchFailure(), "");
}

}  // namespace
}  // namespace gpusim::testing
