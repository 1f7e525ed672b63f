// NCCL on the simulated GPUs: collectives in a group run after each rank's earlier stream work and
// before its later work, with the ring's traffic and none through the host; pre-multiplied sums;
// the misuses a card would punish (host or foreign buffers, mismatched ranks, a rank missing from
// the group, a destroyed communicator) are refused; a lost GPU fails its clique's collectives and
// leaves abort as the only teardown.
#include <cuda_runtime.h>
#include <gtest/gtest.h>
#include <nccl.h>

#include <array>
#include <vector>

#include "gpusim/traffic.h"
#include "kernels/cuda/device_buffer.h"
#include "tests/gpusim/gpusim_test_support.h"

namespace gpusim::testing {
namespace {

using xmlt::kernels::cuda::DeviceBuffer;
using xmlt::kernels::cuda::DeviceGuard;
using xmlt::kernels::cuda::PinnedBuffer;
using xmlt::kernels::cuda::Stream;

__global__ void AddKernel(float* values, float term) { values[threadIdx.x] += term; }

// Two ranks on GPUs 0 and 1, each with a stream and device buffers.
class NcclTest : public SimTest {
 protected:
  void SetUp() override {
    SimTest::SetUp();
    ASSERT_EQ(ncclCommInitAll(comms.data(), 2, nullptr), ncclSuccess);
    for (int r = 0; r < 2; ++r) {
      DeviceGuard guard(r);
      streams[r].emplace_back();
    }
  }
  void TearDown() override {
    for (ncclComm_t comm : comms) ncclCommAbort(comm);  // whatever a test left
    for (auto& s : streams) s.clear();
    SimTest::TearDown();
  }

  DeviceBuffer<float> On(int gpu, const std::vector<float>& values) {
    DeviceGuard guard(gpu);
    return DeviceBuffer<float>::FromHost(values);
  }
  static std::vector<float> Read(int gpu, const DeviceBuffer<float>& buffer) {
    DeviceGuard guard(gpu);
    return buffer.ToHost();
  }
  cudaStream_t StreamOf(int r) { return streams[r][0].get(); }
  // The ranks' streams do not synchronize with the null stream the reads copy on.
  void Sync() {
    for (int r = 0; r < 2; ++r) XMLT_CUDA_CHECK(cudaStreamSynchronize(StreamOf(r)));
  }

  std::array<ncclComm_t, 2> comms{};
  std::array<std::vector<Stream>, 2> streams;
};

TEST_F(NcclTest, AnAllReduceInAGroupSumsEveryRanksBufferIntoEveryRanks) {
  DeviceBuffer<float> a = On(0, {1, 2, 3}), b = On(1, {10, 20, 30});
  DeviceBuffer<float> out0 = On(0, {0, 0, 0});
  ASSERT_EQ(ncclGroupStart(), ncclSuccess);
  ASSERT_EQ(ncclAllReduce(a.data(), out0.data(), 3, ncclFloat32, ncclSum, comms[0], StreamOf(0)), ncclSuccess);
  ASSERT_EQ(ncclAllReduce(b.data(), b.data(), 3, ncclFloat32, ncclSum, comms[1], StreamOf(1)), ncclSuccess);  // in place
  ASSERT_EQ(ncclGroupEnd(), ncclSuccess);
  Sync();
  EXPECT_EQ(Read(0, out0), (std::vector<float>{11, 22, 33}));
  EXPECT_EQ(Read(1, b), (std::vector<float>{11, 22, 33}));
  EXPECT_EQ(Read(0, a), (std::vector<float>{1, 2, 3})) << "the send buffer of an out-of-place call stays";
}

TEST_F(NcclTest, ACollectiveRunsAfterEachRanksEarlierWorkAndBeforeItsLaterWork) {
  DeviceBuffer<float> a = On(0, std::vector<float>(32, 1)), b = On(1, std::vector<float>(32, 2));
  {
    DeviceGuard guard(1);
    XMLT_LAUNCH(AddKernel, 1, 32, 0, StreamOf(1))(b.data(), 100.0f);  // before: 102 enters the sum
  }
  ASSERT_EQ(ncclGroupStart(), ncclSuccess);
  ASSERT_EQ(ncclAllReduce(a.data(), a.data(), 32, ncclFloat32, ncclSum, comms[0], StreamOf(0)), ncclSuccess);
  ASSERT_EQ(ncclAllReduce(b.data(), b.data(), 32, ncclFloat32, ncclSum, comms[1], StreamOf(1)), ncclSuccess);
  ASSERT_EQ(ncclGroupEnd(), ncclSuccess);
  PinnedBuffer<float> result(32);
  result.data()[0] = -1;
  {
    DeviceGuard guard(0);
    XMLT_LAUNCH(AddKernel, 1, 32, 0, StreamOf(0))(a.data(), 1000.0f);  // after: adds to the sum
    XMLT_CUDA_CHECK(cudaMemcpyAsync(result.data(), a.data(), 32 * sizeof(float), cudaMemcpyDeviceToHost, StreamOf(0)));
  }
  EXPECT_EQ(result.data()[0], -1.0f) << "nothing ran before a wait";
  XMLT_CUDA_CHECK(cudaStreamSynchronize(StreamOf(0)));  // runs rank 1's earlier work too
  EXPECT_EQ(result.data()[0], 1103.0f);
  Sync();
  EXPECT_EQ(Read(1, b)[31], 103.0f);
}

TEST_F(NcclTest, PreMulSumWeighsEachRanksInputWithItsOwnScalar) {
  DeviceBuffer<float> a = On(0, {1, 2}), b = On(1, {10, 20});
  float half = 0.5f, tenth = 0.1f;
  ncclRedOp_t op0, op1;
  ASSERT_EQ(ncclRedOpCreatePreMulSum(&op0, &half, ncclFloat32, ncclScalarHostImmediate, comms[0]), ncclSuccess);
  // On the device: read when the collective runs.
  DeviceBuffer<float> scalar = On(1, {0.0f});
  ASSERT_EQ(ncclRedOpCreatePreMulSum(&op1, scalar.data(), ncclFloat32, ncclScalarDevice, comms[1]), ncclSuccess);
  half = 7;  // host-immediate scalars were read at creation
  ASSERT_EQ(ncclGroupStart(), ncclSuccess);
  ASSERT_EQ(ncclAllReduce(a.data(), a.data(), 2, ncclFloat32, op0, comms[0], StreamOf(0)), ncclSuccess);
  ASSERT_EQ(ncclAllReduce(b.data(), b.data(), 2, ncclFloat32, op1, comms[1], StreamOf(1)), ncclSuccess);
  ASSERT_EQ(ncclGroupEnd(), ncclSuccess);
  {
    DeviceGuard guard(1);
    XMLT_CUDA_CHECK(cudaMemcpy(scalar.data(), &tenth, sizeof(float), cudaMemcpyHostToDevice));
  }
  // Destroyed right after the calls, as NCCL allows.
  EXPECT_EQ(ncclRedOpDestroy(op0, comms[0]), ncclSuccess);
  EXPECT_EQ(ncclRedOpDestroy(op1, comms[1]), ncclSuccess);
  EXPECT_EQ(ncclRedOpDestroy(op1, comms[1]), ncclInvalidArgument) << "twice";
  Sync();
  const std::vector<float> got = Read(0, a);
  EXPECT_FLOAT_EQ(got[0], 0.5f * 1 + 0.1f * 10);
  EXPECT_FLOAT_EQ(got[1], 0.5f * 2 + 0.1f * 20);
  EXPECT_EQ(Read(1, b), got);
}

TEST_F(NcclTest, ReduceScatterAndAllGatherInPlaceMoveTheRingsTrafficAndNoHostBytes) {
  const size_t shard = 1000;
  std::vector<float> x(2 * shard), y(2 * shard);
  for (size_t i = 0; i < 2 * shard; ++i) {
    x[i] = float(i);
    y[i] = float(3 * i);
  }
  DeviceBuffer<float> a = On(0, x), b = On(1, y);
  ResetTraffic();
  ASSERT_EQ(ncclGroupStart(), ncclSuccess);
  ASSERT_EQ(ncclReduceScatter(a.data(), a.data(), shard, ncclFloat32, ncclSum, comms[0], StreamOf(0)), ncclSuccess);
  ASSERT_EQ(ncclReduceScatter(b.data(), b.data() + shard, shard, ncclFloat32, ncclSum, comms[1], StreamOf(1)),
            ncclSuccess);
  ASSERT_EQ(ncclGroupEnd(), ncclSuccess);
  Sync();
  for (int r = 0; r < 2; ++r) {
    EXPECT_EQ(TrafficOf(r).peer_sent, shard * sizeof(float)) << "(N-1)/N of the buffer, rank " << r;
    EXPECT_EQ(TrafficOf(r).peer_received, shard * sizeof(float));
  }
  std::vector<float> sum = Read(0, a);
  EXPECT_EQ(sum[5], 4 * 5.0f);
  sum = Read(1, b);
  EXPECT_EQ(sum[shard + 5], 4 * float(shard + 5)) << "rank 1 owns the second shard";
  ResetTraffic();
  ASSERT_EQ(ncclGroupStart(), ncclSuccess);
  ASSERT_EQ(ncclAllGather(a.data(), a.data(), shard, ncclFloat32, comms[0], StreamOf(0)), ncclSuccess);
  ASSERT_EQ(ncclAllGather(b.data() + shard, b.data(), shard, ncclFloat32, comms[1], StreamOf(1)), ncclSuccess);
  ASSERT_EQ(ncclGroupEnd(), ncclSuccess);
  Sync();
  for (int r = 0; r < 2; ++r) {
    EXPECT_EQ(TrafficOf(r).peer_sent, shard * sizeof(float));
    EXPECT_EQ(TrafficOf(r).to_host, 0u);
    EXPECT_EQ(TrafficOf(r).from_host, 0u);
  }
  for (int r = 0; r < 2; ++r) {
    const std::vector<float> all = Read(r, r == 0 ? a : b);
    for (size_t i = 0; i < 2 * shard; ++i) ASSERT_EQ(all[i], 4.0f * float(i)) << "rank " << r << ", value " << i;
  }
  ResetTraffic();
  ASSERT_EQ(ncclGroupStart(), ncclSuccess);
  ASSERT_EQ(ncclAllReduce(a.data(), a.data(), 2 * shard, ncclFloat32, ncclSum, comms[0], StreamOf(0)), ncclSuccess);
  ASSERT_EQ(ncclAllReduce(b.data(), b.data(), 2 * shard, ncclFloat32, ncclSum, comms[1], StreamOf(1)), ncclSuccess);
  ASSERT_EQ(ncclGroupEnd(), ncclSuccess);
  for (int r = 0; r < 2; ++r) EXPECT_EQ(TrafficOf(r).peer_sent, 2 * shard * sizeof(float)) << "2(N-1)/N";
}

TEST_F(NcclTest, RefusesHostAndForeignBuffersMismatchedRanksAMissingRankAndAnUngroupedCall) {
  DeviceBuffer<float> a = On(0, std::vector<float>(8, 1)), b = On(1, std::vector<float>(8, 2));
  std::vector<float> host(8);
  // Host memory, and GPU 1's memory for rank 0: refused at the call, and the group with it.
  ASSERT_EQ(ncclGroupStart(), ncclSuccess);
  EXPECT_EQ(ncclAllReduce(host.data(), a.data(), 8, ncclFloat32, ncclSum, comms[0], StreamOf(0)), ncclInvalidArgument);
  EXPECT_EQ(ncclAllReduce(b.data(), b.data(), 8, ncclFloat32, ncclSum, comms[1], StreamOf(1)), ncclSuccess);
  EXPECT_EQ(ncclGroupEnd(), ncclInvalidArgument);
  ASSERT_EQ(ncclGroupStart(), ncclSuccess);
  EXPECT_EQ(ncclAllReduce(b.data(), a.data(), 8, ncclFloat32, ncclSum, comms[0], StreamOf(0)), ncclInvalidArgument);
  EXPECT_EQ(ncclAllReduce(a.data(), a.data(), 9, ncclFloat32, ncclSum, comms[0], StreamOf(0)), ncclInvalidArgument)
      << "past the buffer's end";
  EXPECT_EQ(ncclAllReduce(a.data(), a.data(), 8, ncclFloat32, ncclSum, comms[0], StreamOf(1)), ncclInvalidArgument)
      << "a stream of another GPU";
  EXPECT_EQ(ncclAllReduce(a.data(), a.data(), 8, ncclInt8, ncclSum, comms[0], StreamOf(0)), ncclInvalidArgument);
  EXPECT_NE(ncclGroupEnd(), ncclSuccess);
  // Counts that differ between the ranks, and ops of different kinds.
  ASSERT_EQ(ncclGroupStart(), ncclSuccess);
  EXPECT_EQ(ncclAllReduce(a.data(), a.data(), 8, ncclFloat32, ncclSum, comms[0], StreamOf(0)), ncclSuccess);
  EXPECT_EQ(ncclAllReduce(b.data(), b.data(), 4, ncclFloat32, ncclSum, comms[1], StreamOf(1)), ncclSuccess);
  EXPECT_EQ(ncclGroupEnd(), ncclInvalidArgument);
  ASSERT_EQ(ncclGroupStart(), ncclSuccess);
  EXPECT_EQ(ncclAllReduce(a.data(), a.data(), 8, ncclFloat32, ncclSum, comms[0], StreamOf(0)), ncclSuccess);
  EXPECT_EQ(ncclAllReduce(b.data(), b.data(), 8, ncclFloat32, ncclMax, comms[1], StreamOf(1)), ncclSuccess);
  EXPECT_EQ(ncclGroupEnd(), ncclInvalidArgument);
  // Rank 1 never calls: one thread would wait forever on a card.
  ASSERT_EQ(ncclGroupStart(), ncclSuccess);
  EXPECT_EQ(ncclAllReduce(a.data(), a.data(), 8, ncclFloat32, ncclSum, comms[0], StreamOf(0)), ncclSuccess);
  EXPECT_EQ(ncclGroupEnd(), ncclInvalidUsage);
  EXPECT_EQ(ncclAllReduce(a.data(), a.data(), 8, ncclFloat32, ncclSum, comms[0], StreamOf(0)), ncclInvalidUsage)
      << "outside a group";
  EXPECT_EQ(ncclGroupEnd(), ncclInvalidUsage) << "no group open";
  // Nothing refused ran.
  EXPECT_EQ(Read(0, a), std::vector<float>(8, 1));
  EXPECT_EQ(Read(1, b), std::vector<float>(8, 2));
}

TEST_F(NcclTest, ACommunicatorIsUnusableAfterDestroyAndDevicesAreOnePerRank) {
  int count = 0, device = -1, rank = -1;
  EXPECT_EQ(ncclCommCount(comms[1], &count), ncclSuccess);
  EXPECT_EQ(ncclCommCuDevice(comms[1], &device), ncclSuccess);
  EXPECT_EQ(ncclCommUserRank(comms[1], &rank), ncclSuccess);
  EXPECT_EQ(count, 2);
  EXPECT_EQ(device, 1);
  EXPECT_EQ(rank, 1);
  DeviceBuffer<float> a = On(0, {1});
  EXPECT_EQ(ncclCommDestroy(comms[0]), ncclSuccess);
  ASSERT_EQ(ncclGroupStart(), ncclSuccess);
  EXPECT_EQ(ncclAllReduce(a.data(), a.data(), 1, ncclFloat32, ncclSum, comms[0], StreamOf(0)), ncclInvalidArgument);
  EXPECT_NE(ncclGroupEnd(), ncclSuccess);
  EXPECT_EQ(ncclCommDestroy(comms[0]), ncclInvalidArgument);
  EXPECT_EQ(ncclCommAbort(comms[0]), ncclInvalidArgument);
  EXPECT_EQ(ncclCommCount(comms[0], &count), ncclInvalidArgument);
  ncclComm_t twice[2];
  const int same[2] = {1, 1};
  EXPECT_EQ(ncclCommInitAll(twice, 2, same), ncclInvalidUsage);
  const int missing[1] = {7};
  EXPECT_EQ(ncclCommInitAll(twice, 1, missing), ncclInvalidArgument);
  EXPECT_STREQ(ncclGetErrorString(ncclInvalidUsage), "invalid usage (run with NCCL_DEBUG=WARN for details)");
}

// A fault in the collective's launch on GPU 1 loses that GPU; GPU 0's buffer is left as it was
// (on a card its kernel would wait for GPU 1 forever), every later collective of the clique is
// refused, ncclCommDestroy (which waits) refuses, and ncclCommAbort tears down.
TEST_F(NcclTest, ALostGpuFailsItsCliquesCollectivesAndOnlyAbortTearsDown) {
  DeviceBuffer<float> a = On(0, {1, 2}), b = On(1, {10, 20});
  InjectStickyErrorAtLaunch(1, cudaErrorIllegalAddress, 1);
  ASSERT_EQ(ncclGroupStart(), ncclSuccess);
  ASSERT_EQ(ncclAllReduce(a.data(), a.data(), 2, ncclFloat32, ncclSum, comms[0], StreamOf(0)), ncclSuccess);
  ASSERT_EQ(ncclAllReduce(b.data(), b.data(), 2, ncclFloat32, ncclSum, comms[1], StreamOf(1)), ncclSuccess);
  ASSERT_EQ(ncclGroupEnd(), ncclSuccess) << "the fault surfaces when the work runs";
  EXPECT_EQ(cudaStreamSynchronize(StreamOf(0)), cudaSuccess);
  EXPECT_EQ(cudaStreamSynchronize(StreamOf(1)), cudaErrorIllegalAddress);
  EXPECT_EQ(Read(0, a), (std::vector<float>{1, 2}));
  ncclResult_t async = ncclSuccess;
  EXPECT_EQ(ncclCommGetAsyncError(comms[0], &async), ncclSuccess);
  EXPECT_EQ(async, ncclRemoteError);
  ASSERT_EQ(ncclGroupStart(), ncclSuccess);
  EXPECT_EQ(ncclAllReduce(a.data(), a.data(), 2, ncclFloat32, ncclSum, comms[0], StreamOf(0)), ncclUnhandledCudaError);
  EXPECT_EQ(ncclGroupEnd(), ncclUnhandledCudaError);
  EXPECT_EQ(ncclCommDestroy(comms[0]), ncclRemoteError);
  EXPECT_EQ(ncclCommAbort(comms[0]), ncclSuccess);
  EXPECT_EQ(ncclCommAbort(comms[1]), ncclSuccess);
}

}  // namespace
}  // namespace gpusim::testing
