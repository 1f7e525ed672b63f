// NCCL's communicators of several ranks on the simulated GPUs, made with ncclGetUniqueId and
// ncclCommInitRank from the host threads that play the ranks: the inits wait for every rank, one
// thread may init several GPUs in one group, collectives form from each rank's calls in order
// (from whichever thread), a rank that never calls fails the collective for the others after
// XMLT_SIM_NCCL_TIMEOUT, mismatched calls fail every rank, a GPU lost on one thread's rank fails
// the others', and the misuses NCCL refuses (a GPU twice, a rank twice, a foreign id) are refused.
#include <cuda_runtime.h>
#include <gtest/gtest.h>
#include <nccl.h>

#include <cstdlib>
#include <cstring>
#include <functional>
#include <thread>
#include <vector>

#include "kernels/cuda/device_buffer.h"
#include "tests/gpusim/gpusim_test_support.h"

namespace gpusim::testing {
namespace {

using xmlt::kernels::cuda::DeviceBuffer;
using xmlt::kernels::cuda::DeviceGuard;

class NcclRanksTest : public SimTest {
 protected:
  void TearDown() override {
    unsetenv("XMLT_SIM_NCCL_TIMEOUT");
    SimTest::TearDown();
  }
  // Runs `body(rank)` on one thread per rank, each starting on GPU `rank`.
  static void OnThreads(int ranks, const std::function<void(int)>& body) {
    std::vector<std::thread> threads;
    for (int r = 0; r < ranks; ++r)
      threads.emplace_back([&body, r] {
        cudaSetDevice(r);
        body(r);
      });
    for (std::thread& t : threads) t.join();
  }
  static ncclUniqueId NewId() {
    ncclUniqueId id;
    EXPECT_EQ(ncclGetUniqueId(&id), ncclSuccess);
    return id;
  }
};

TEST_F(NcclRanksTest, RanksOnTwoThreadsAllReduceAndReduceScatterTogether) {
  const ncclUniqueId id = NewId();
  std::vector<std::vector<float>> summed(2), scattered(2);
  OnThreads(2, [&](int rank) {
    ncclComm_t comm = nullptr;
    ASSERT_EQ(ncclCommInitRank(&comm, 2, id, rank), ncclSuccess);
    int device = -1, count = 0, me = -1;
    EXPECT_EQ(ncclCommCuDevice(comm, &device), ncclSuccess);
    EXPECT_EQ(ncclCommCount(comm, &count), ncclSuccess);
    EXPECT_EQ(ncclCommUserRank(comm, &me), ncclSuccess);
    EXPECT_EQ(device, rank);
    EXPECT_EQ(count, 2);
    EXPECT_EQ(me, rank);
    const float base = rank == 0 ? 1.0f : 10.0f;
    DeviceBuffer<float> values =
        DeviceBuffer<float>::FromHost({base, 2 * base, 3 * base, 4 * base});
    DeviceBuffer<float> half = DeviceBuffer<float>::FromHost({0, 0});
    // Outside a group: each thread drives one rank, as NCCL allows.
    ASSERT_EQ(ncclReduceScatter(values.data(), half.data(), 2, ncclFloat32, ncclSum, comm, nullptr),
              ncclSuccess);
    ASSERT_EQ(ncclAllReduce(values.data(), values.data(), 4, ncclFloat32, ncclSum, comm, nullptr),
              ncclSuccess);
    EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    summed[size_t(rank)] = values.ToHost();
    scattered[size_t(rank)] = half.ToHost();
    ncclResult_t async = ncclInternalError;
    EXPECT_EQ(ncclCommGetAsyncError(comm, &async), ncclSuccess);
    EXPECT_EQ(async, ncclSuccess);
    EXPECT_EQ(ncclCommDestroy(comm), ncclSuccess);
  });
  for (int r = 0; r < 2; ++r)
    EXPECT_EQ(summed[size_t(r)], (std::vector<float>{11, 22, 33, 44})) << "rank " << r;
  EXPECT_EQ(scattered[0], (std::vector<float>{11, 22}));
  EXPECT_EQ(scattered[1], (std::vector<float>{33, 44}));
}

// Both ranks on one thread: NCCL's way to init several GPUs from one thread is one group, where
// each ncclCommInitRank would otherwise wait for the other; their collectives go in a group too.
TEST_F(NcclRanksTest, OneThreadInitsTwoGpusInOneGroup) {
  const ncclUniqueId id = NewId();
  std::vector<ncclComm_t> comms(2, nullptr);
  ASSERT_EQ(ncclGroupStart(), ncclSuccess);
  for (int g = 0; g < 2; ++g) {
    DeviceGuard guard(g);
    ASSERT_EQ(ncclCommInitRank(&comms[size_t(g)], 2, id, g), ncclSuccess);
  }
  ASSERT_EQ(comms[0], nullptr) << "made at ncclGroupEnd, not before";
  ASSERT_EQ(ncclGroupEnd(), ncclSuccess);
  std::vector<DeviceBuffer<float>> values;
  for (int g = 0; g < 2; ++g) {
    DeviceGuard guard(g);
    values.push_back(DeviceBuffer<float>::FromHost({float(g + 1), float(10 * (g + 1))}));
  }
  ASSERT_EQ(ncclGroupStart(), ncclSuccess);
  for (size_t g = 0; g < 2; ++g)
    ASSERT_EQ(ncclAllReduce(values[g].data(), values[g].data(), 2, ncclFloat32, ncclSum, comms[g],
                            nullptr),
              ncclSuccess);
  ASSERT_EQ(ncclGroupEnd(), ncclSuccess);
  for (int g = 0; g < 2; ++g) {
    DeviceGuard guard(g);
    EXPECT_EQ(values[size_t(g)].ToHost(), (std::vector<float>{3, 30})) << "rank " << g;
    EXPECT_EQ(ncclCommDestroy(comms[size_t(g)]), ncclSuccess);
  }
}

TEST_F(NcclRanksTest, ARankThatNeverCallsFailsTheCollectiveForTheOthersAfterTheTimeout) {
  setenv("XMLT_SIM_NCCL_TIMEOUT", "0.5", 1);
  const ncclUniqueId id = NewId();
  std::vector<ncclComm_t> comms(2, nullptr);
  OnThreads(2, [&](int rank) {
    ASSERT_EQ(ncclCommInitRank(&comms[size_t(rank)], 2, id, rank), ncclSuccess);
  });
  DeviceBuffer<float> values = DeviceBuffer<float>::FromHost({1, 2});
  // Rank 0 calls; rank 1 never does.
  ASSERT_EQ(ncclAllReduce(values.data(), values.data(), 2, ncclFloat32, ncclSum, comms[0], nullptr),
            ncclSuccess);
  EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);  // no hang
  ncclResult_t async = ncclSuccess;
  EXPECT_EQ(ncclCommGetAsyncError(comms[0], &async), ncclSuccess);
  EXPECT_EQ(async, ncclRemoteError);
  EXPECT_EQ(values.ToHost(), (std::vector<float>{1, 2})) << "nothing moved";
  EXPECT_NE(ncclAllReduce(values.data(), values.data(), 2, ncclFloat32, ncclSum, comms[0], nullptr),
            ncclSuccess)
      << "the communicator is in error";
  EXPECT_NE(ncclCommDestroy(comms[0]), ncclSuccess) << "only an abort tears it down";
  EXPECT_EQ(ncclCommAbort(comms[0]), ncclSuccess);
  EXPECT_EQ(ncclCommAbort(comms[1]), ncclSuccess);
}

TEST_F(NcclRanksTest, AnInitWhoseRanksNeverAllJoinTimesOut) {
  setenv("XMLT_SIM_NCCL_TIMEOUT", "0.2", 1);
  ncclComm_t comm = nullptr;
  EXPECT_EQ(ncclCommInitRank(&comm, 2, NewId(), 0), ncclSystemError);
}

TEST_F(NcclRanksTest, MismatchedCallsFromTwoThreadsFailEveryRank) {
  const ncclUniqueId id = NewId();
  std::vector<ncclResult_t> async(2, ncclSuccess);
  OnThreads(2, [&](int rank) {
    ncclComm_t comm = nullptr;
    ASSERT_EQ(ncclCommInitRank(&comm, 2, id, rank), ncclSuccess);
    DeviceBuffer<float> values = DeviceBuffer<float>::FromHost({1, 2, 3});
    const size_t count = rank == 0 ? 3 : 2;
    ASSERT_EQ(
        ncclAllReduce(values.data(), values.data(), count, ncclFloat32, ncclSum, comm, nullptr),
        ncclSuccess);
    cudaDeviceSynchronize();
    EXPECT_EQ(values.ToHost(), (std::vector<float>{1, 2, 3}));
    ncclCommGetAsyncError(comm, &async[size_t(rank)]);
    ncclCommAbort(comm);
  });
  EXPECT_EQ(async, (std::vector<ncclResult_t>{ncclInvalidArgument, ncclInvalidArgument}));
}

TEST_F(NcclRanksTest, AGpuLostOnOneThreadsRankFailsTheOtherRanksCollective) {
  const ncclUniqueId id = NewId();
  std::vector<cudaError_t> synced(2, cudaSuccess);
  std::vector<ncclResult_t> async(2, ncclSuccess);
  std::vector<std::vector<float>> after(2);
  OnThreads(2, [&](int rank) {
    ncclComm_t comm = nullptr;
    ASSERT_EQ(ncclCommInitRank(&comm, 2, id, rank), ncclSuccess);
    DeviceBuffer<float> values = DeviceBuffer<float>::FromHost({1, 2});
    // The collective is GPU 1's next launch.
    if (rank == 1) InjectStickyErrorAtLaunch(1, cudaErrorIllegalAddress, 1);
    ASSERT_EQ(ncclAllReduce(values.data(), values.data(), 2, ncclFloat32, ncclSum, comm, nullptr),
              ncclSuccess);
    synced[size_t(rank)] = cudaDeviceSynchronize();
    ncclCommGetAsyncError(comm, &async[size_t(rank)]);
    if (rank == 0) after[0] = values.ToHost();
    EXPECT_EQ(ncclCommAbort(comm), ncclSuccess);
  });
  EXPECT_EQ(synced[0], cudaSuccess) << "rank 0's GPU is fine";
  EXPECT_EQ(synced[1], cudaErrorIllegalAddress);
  EXPECT_EQ(async[0], ncclRemoteError);
  EXPECT_EQ(async[1], ncclUnhandledCudaError);
  EXPECT_EQ(after[0], (std::vector<float>{1, 2})) << "nothing moved";
}

TEST_F(NcclRanksTest, RefusesAGpuTwiceARankTwiceABadRankAndAForeignId) {
  setenv("XMLT_SIM_NCCL_TIMEOUT", "0.2", 1);
  const ncclUniqueId id = NewId();
  std::vector<ncclComm_t> comms(2, nullptr);
  ASSERT_EQ(ncclGroupStart(), ncclSuccess);
  ASSERT_EQ(ncclCommInitRank(&comms[0], 3, id, 0), ncclSuccess);
  ASSERT_EQ(ncclCommInitRank(&comms[1], 3, id, 1), ncclSuccess);  // GPU 0 again
  EXPECT_EQ(ncclGroupEnd(), ncclInvalidUsage);
  ncclComm_t comm = nullptr;
  EXPECT_EQ(ncclCommInitRank(&comm, 3, id, 0), ncclInvalidUsage) << "rank 0 joined already";
  EXPECT_EQ(ncclCommInitRank(&comm, 3, id, 3), ncclInvalidArgument);
  ncclUniqueId foreign;
  std::memset(&foreign, 0, sizeof(foreign));
  std::strcpy(foreign.internal, "gpusim-nccl:1:1");  // pid 1's
  EXPECT_EQ(ncclCommInitRank(&comm, 1, foreign, 0), ncclSystemError);
  std::strcpy(foreign.internal, "not an id");
  EXPECT_EQ(ncclCommInitRank(&comm, 1, foreign, 0), ncclInvalidArgument);
  if (comms[0] != nullptr) ncclCommAbort(comms[0]);
}

}  // namespace
}  // namespace gpusim::testing
