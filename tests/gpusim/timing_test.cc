// The virtual clock: copies take latency + bytes / bandwidth, share a port by going one after the
// other, overlap on independent ports; event waits and host synchronizations order time as they
// order work; a kernel takes the bytes it was said to touch / HBM bandwidth; NCCL's collectives
// take their ring's steps.
#include "gpusim/timing.h"

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
using xmlt::kernels::cuda::Event;
using xmlt::kernels::cuda::PinnedBuffer;
using xmlt::kernels::cuda::Stream;

// Writes without reading: the buffers are never filled, and initcheck fails a read of them.
__global__ void TouchKernel(float* values) { values[threadIdx.x] = 1.0f; }

constexpr uint64_t kBytes = 1000000;
constexpr double kEps = 1e-12;
// Round figures, so that each expectation can be worked out by hand: 10 GB/s and 3 us between
// GPUs, 5 GB/s and 7 us to the host, 100 GB/s of memory.
constexpr double kPeer = kBytes / 10e9, kPeerLatency = 3e-6;
constexpr double kHost = kBytes / 5e9, kHostLatency = 7e-6;

class TimingTest : public SimTest {
 protected:
  void SetUp() override {
    SimTest::SetUp();
    saved_ = CurrentLinkModel();
    LinkModel model;
    model.name = "test";
    model.peer_gbps = 10;
    model.peer_latency_us = 3;
    model.host_gbps = 5;
    model.host_latency_us = 7;
    model.hbm_gbps = 100;
    SetLinkModel(model);
    for (int gpu : {0, 1}) {
      DeviceGuard guard(gpu);
      buffers_.emplace_back(kBytes);
    }
  }
  void TearDown() override {
    buffers_.clear();  // before the devices are reset
    SetLinkModel(saved_);
    SimTest::TearDown();
  }

  // A peer copy of kBytes from GPU `from` to GPU `to`, on `stream`.
  void PeerCopy(int from, int to, cudaStream_t stream) {
    XMLT_CUDA_CHECK(cudaMemcpyPeerAsync(buffers_[to].data(), to, buffers_[from].data(), from, kBytes, stream));
  }

  LinkModel saved_;
  std::vector<DeviceBuffer<unsigned char>> buffers_;  // kBytes on GPU 0, on GPU 1
};

TEST_F(TimingTest, ACopyTakesLatencyPlusBytesOverBandwidth) {
  DeviceGuard guard(1);
  Stream stream;
  PeerCopy(0, 1, stream.get());
  EXPECT_EQ(ProjectedTime(), 0.0) << "nothing has run before the stream is waited for";
  stream.Synchronize();
  EXPECT_NEAR(ProjectedTime(), kPeerLatency + kPeer, kEps);
  EXPECT_NEAR(BusyTimeOf(0).send, kPeer, kEps);
  EXPECT_NEAR(BusyTimeOf(1).receive, kPeer, kEps);
  EXPECT_EQ(BusyTimeOf(0).receive, 0.0);
}

TEST_F(TimingTest, TwoCopiesOnOnePortGoOneAfterTheOther) {
  DeviceGuard guard(1);
  Stream first, second;
  PeerCopy(0, 1, first.get());
  PeerCopy(0, 1, second.get());
  first.Synchronize();
  second.Synchronize();
  // The latency holds up each copy's end, not the port.
  EXPECT_NEAR(ProjectedTime(), 2 * kPeer + kPeerLatency, kEps);
  EXPECT_NEAR(BusyTimeOf(0).send, 2 * kPeer, kEps);
}

TEST_F(TimingTest, ACopyUsesTheGapsOthersLeaveOnItsPort) {
  DeviceGuard guard(1);
  Stream chained, other;
  // Two copies in one stream leave the port idle for a latency between them; a concurrent copy
  // uses that gap and then the time after them: the port is never idle while a copy waits.
  PeerCopy(0, 1, chained.get());
  PeerCopy(0, 1, chained.get());
  PeerCopy(0, 1, other.get());
  chained.Synchronize();  // runs first, so it takes the port first
  other.Synchronize();
  EXPECT_NEAR(ProjectedTime(), 3 * kPeer + kPeerLatency, kEps);
}

TEST_F(TimingTest, CopiesOnIndependentPortsOverlap) {
  Stream forward, backward;
  {
    DeviceGuard guard(1);
    Stream on_1;
    PeerCopy(0, 1, on_1.get());
    forward = std::move(on_1);
  }
  PeerCopy(1, 0, backward.get());  // the other direction: another port at each end
  forward.Synchronize();
  backward.Synchronize();
  EXPECT_NEAR(ProjectedTime(), kPeer + kPeerLatency, kEps);
}

TEST_F(TimingTest, HostCopiesUseTheHostLink) {
  PinnedBuffer<unsigned char> host(kBytes);
  Stream stream;
  XMLT_CUDA_CHECK(cudaMemcpyAsync(buffers_[0].data(), host.data(), kBytes, cudaMemcpyHostToDevice, stream.get()));
  stream.Synchronize();
  EXPECT_NEAR(ProjectedTime(), kHost + kHostLatency, kEps);
  EXPECT_NEAR(BusyTimeOf(0).receive, kHost, kEps);
}

TEST_F(TimingTest, APeerCopyWithoutPeerAccessCrossesTheHostLinkTwice) {
  DeviceGuard guard(1);
  Stream stream;
  PeerCopy(0, 1, stream.get());
  stream.Synchronize();
  // ctest runs this test once more with XMLT_SIM_PEER_ACCESS=0: down to the host, then up.
  EXPECT_NEAR(ProjectedTime(), PeerAccessAllowed() ? kPeer + kPeerLatency : 2 * (kHost + kHostLatency), kEps);
  EXPECT_NEAR(BusyTimeOf(0).send, PeerAccessAllowed() ? kPeer : kHost, kEps);
}

TEST_F(TimingTest, AKernelTakesTheBytesItWasSaidToTouchOverHbmBandwidth) {
  Stream stream;
  DeviceBuffer<float> values(32);
  XMLT_SIM_KERNEL_BYTES(2 * kBytes);
  XMLT_LAUNCH(TouchKernel, 1, 32, 0, stream.get())(values.data());
  stream.Synchronize();
  EXPECT_NEAR(ProjectedTime(), 2 * kBytes / 100e9, kEps);
  EXPECT_NEAR(BusyTimeOf(0).memory, 2 * kBytes / 100e9, kEps);
  EXPECT_EQ(UnhintedKernels(), 0u);
  // Without a hint: no time, but counted, so that a projection can tell it left something out.
  XMLT_LAUNCH(TouchKernel, 1, 32, 0, stream.get())(values.data());
  stream.Synchronize();
  EXPECT_NEAR(ProjectedTime(), 2 * kBytes / 100e9, kEps);
  EXPECT_EQ(UnhintedKernels(), 1u);
}

TEST_F(TimingTest, AnEventWaitDelaysTheWaitingStream) {
  Stream copies, kernels;
  Event copied;
  DeviceBuffer<float> values(32);
  {
    DeviceGuard guard(1);
    Stream on_1;
    copies = std::move(on_1);
  }
  PeerCopy(1, 0, copies.get());
  copied.Record(copies.get());
  XMLT_CUDA_CHECK(cudaStreamWaitEvent(kernels.get(), copied.get(), 0));
  XMLT_SIM_KERNEL_BYTES(kBytes);
  XMLT_LAUNCH(TouchKernel, 1, 32, 0, kernels.get())(values.data());
  kernels.Synchronize();
  EXPECT_NEAR(ProjectedTime(), kPeer + kPeerLatency + kBytes / 100e9, kEps);
}

TEST_F(TimingTest, WorkIssuedAfterASynchronizationStartsAfterIt) {
  Stream stream, other;
  DeviceBuffer<float> values(32);
  XMLT_SIM_KERNEL_BYTES(kBytes);
  XMLT_LAUNCH(TouchKernel, 1, 32, 0, stream.get())(values.data());
  stream.Synchronize();
  // A stream that has done nothing yet still cannot start before what the host waited for.
  XMLT_SIM_KERNEL_BYTES(kBytes);
  XMLT_LAUNCH(TouchKernel, 1, 32, 0, other.get())(values.data());
  other.Synchronize();
  EXPECT_NEAR(ProjectedTime(), 2 * kBytes / 100e9, kEps);
}

TEST_F(TimingTest, KernelsOfOneGpuShareItsMemory) {
  Stream a, b;
  DeviceBuffer<float> values(32);
  for (Stream* s : {&a, &b}) {
    XMLT_SIM_KERNEL_BYTES(kBytes);
    XMLT_LAUNCH(TouchKernel, 1, 32, 0, s->get())(values.data());
  }
  a.Synchronize();
  b.Synchronize();
  EXPECT_NEAR(ProjectedTime(), 2 * kBytes / 100e9, kEps);
}

TEST_F(TimingTest, AResetStartsFromZero) {
  DeviceGuard guard(1);
  Stream stream;
  PeerCopy(0, 1, stream.get());
  stream.Synchronize();
  ResetProjection();
  EXPECT_EQ(ProjectedTime(), 0.0);
  EXPECT_EQ(BusyTimeOf(0).send, 0.0);
  PeerCopy(0, 1, stream.get());
  stream.Synchronize();
  EXPECT_NEAR(ProjectedTime(), kPeer + kPeerLatency, kEps);
}

// Two ranks: an all-reduce of kBytes is one reduce-scatter step and one all-gather step, each
// rank sending half the buffer in each, a latency per step; the reduction reads and writes three
// half-buffers of the receiver's memory beside its copy (15 us, less than the copy's 53 us).
TEST_F(TimingTest, AnNcclAllReduceTakesItsRingsStepsFromWhenTheLastRanksInputIsReady) {
  std::array<ncclComm_t, 2> comms{};
  ASSERT_EQ(ncclCommInitAll(comms.data(), 2, nullptr), ncclSuccess);
  const size_t floats = kBytes / sizeof(float);
  std::vector<Stream> streams;
  std::vector<DeviceBuffer<float>> data;
  for (int gpu : {0, 1}) {
    DeviceGuard guard(gpu);
    streams.emplace_back();
    data.emplace_back(floats);
  }
  PinnedBuffer<unsigned char> host(kBytes);
  {
    DeviceGuard guard(1);  // rank 1's input comes from the host first: the collective waits for it
    XMLT_CUDA_CHECK(cudaMemcpyAsync(data[1].data(), host.data(), kBytes, cudaMemcpyHostToDevice, streams[1].get()));
  }
  ASSERT_EQ(ncclGroupStart(), ncclSuccess);
  for (int r : {0, 1})
    ASSERT_EQ(ncclAllReduce(data[r].data(), data[r].data(), floats, ncclFloat32, ncclSum, comms[r], streams[r].get()),
              ncclSuccess);
  ASSERT_EQ(ncclGroupEnd(), ncclSuccess);
  XMLT_SIM_KERNEL_BYTES(kBytes);  // rank 0's next work starts when the collective has ended
  XMLT_LAUNCH(TouchKernel, 1, 32, 0, streams[0].get())(data[0].data());
  for (Stream& s : streams) s.Synchronize();
  const double input = kHost + kHostLatency, step = kPeer / 2 + kPeerLatency, reduction = 1.5 * kBytes / 100e9;
  EXPECT_NEAR(ProjectedTime(), input + 2 * step + kBytes / 100e9, kEps);
  EXPECT_NEAR(BusyTimeOf(0).send, kPeer, kEps) << "2(N-1)/N of the buffer out of each rank";
  EXPECT_NEAR(BusyTimeOf(1).receive, kHost + kPeer, kEps);
  EXPECT_NEAR(BusyTimeOf(0).memory, reduction + kBytes / 100e9, kEps);
  EXPECT_NEAR(BusyTimeOf(1).memory, reduction, kEps);
  for (ncclComm_t comm : comms) EXPECT_EQ(ncclCommDestroy(comm), ncclSuccess);
}

// A reduce-scatter then an all-gather, in place (the sharded merge): each (N-1)/N of the buffer
// per rank, one step each on two ranks, and the arithmetic only in the reduce-scatter.
TEST_F(TimingTest, AnNcclReduceScatterAndAllGatherEachTakeHalfAnAllReduce) {
  std::array<ncclComm_t, 2> comms{};
  ASSERT_EQ(ncclCommInitAll(comms.data(), 2, nullptr), ncclSuccess);
  const size_t shard = kBytes / sizeof(float) / 2;
  std::vector<Stream> streams;
  std::vector<DeviceBuffer<float>> data;
  for (int gpu : {0, 1}) {
    DeviceGuard guard(gpu);
    streams.emplace_back();
    data.emplace_back(2 * shard);
  }
  ASSERT_EQ(ncclGroupStart(), ncclSuccess);
  for (int r : {0, 1})
    ASSERT_EQ(ncclReduceScatter(data[r].data(), data[r].data() + r * shard, shard, ncclFloat32, ncclSum, comms[r],
                                streams[r].get()),
              ncclSuccess);
  ASSERT_EQ(ncclGroupEnd(), ncclSuccess);
  for (Stream& s : streams) s.Synchronize();
  const double step = kPeer / 2 + kPeerLatency;
  EXPECT_NEAR(ProjectedTime(), step, kEps);
  EXPECT_NEAR(BusyTimeOf(1).memory, 1.5 * kBytes / 100e9, kEps);
  ASSERT_EQ(ncclGroupStart(), ncclSuccess);
  for (int r : {0, 1})
    ASSERT_EQ(ncclAllGather(data[r].data() + r * shard, data[r].data(), shard, ncclFloat32, comms[r], streams[r].get()),
              ncclSuccess);
  ASSERT_EQ(ncclGroupEnd(), ncclSuccess);
  for (Stream& s : streams) s.Synchronize();
  EXPECT_NEAR(ProjectedTime(), 2 * step, kEps);
  EXPECT_NEAR(BusyTimeOf(0).send, kPeer, kEps);
  EXPECT_NEAR(BusyTimeOf(1).memory, 1.5 * kBytes / 100e9, kEps) << "an all-gather in place adds nothing";
  for (ncclComm_t comm : comms) EXPECT_EQ(ncclCommDestroy(comm), ncclSuccess);
}

TEST(LinkModels, NamedModelsHaveTheirStatedFigures) {
  const LinkModel pcie = LinkModelNamed("pcie4"), nvlink = LinkModelNamed("nvlink4");
  EXPECT_EQ(pcie.peer_gbps, 25);
  EXPECT_TRUE(pcie.peer_over_host_link);
  EXPECT_EQ(nvlink.peer_gbps, 450);
  EXPECT_EQ(nvlink.hbm_gbps, 3350);
  EXPECT_THROW(LinkModelNamed("carrier-pigeon"), std::invalid_argument);
}

}  // namespace
}  // namespace gpusim::testing
