// Streams run in order and only when waited for: a forgotten synchronization shows stale data on
// every run; events wait for their stream's work up to the record.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <vector>

#include "kernels/cuda/device_buffer.h"
#include "tests/gpusim/gpusim_test_support.h"

namespace gpusim::testing {
namespace {

using xmlt::kernels::cuda::DeviceBuffer;
using xmlt::kernels::cuda::Event;
using xmlt::kernels::cuda::PinnedBuffer;
using xmlt::kernels::cuda::Stream;

__global__ void ScaleKernel(float* values, float factor) { values[threadIdx.x] *= factor; }
__global__ void AddKernel(float* values, float term) { values[threadIdx.x] += term; }

TEST_F(SimTest, WorkRunsInStreamOrderWhenWaitedFor) {
  Stream stream;
  DeviceBuffer<float> values = DeviceBuffer<float>::FromHost(std::vector<float>(32, 1.0f));
  PinnedBuffer<float> result(32);
  result.data()[0] = -1;
  XMLT_LAUNCH(AddKernel, 1, 32, 0, stream.get())(values.data(), 2.0f);
  XMLT_LAUNCH(ScaleKernel, 1, 32, 0, stream.get())(values.data(), 10.0f);  // (1 + 2) * 10, not 1 * 10 + 2
  XMLT_CUDA_CHECK(cudaMemcpyAsync(result.data(), values.data(), 32 * sizeof(float), cudaMemcpyDeviceToHost,
                                  stream.get()));
  EXPECT_EQ(result.data()[0], -1.0f) << "read before the stream was waited for";
  EXPECT_EQ(cudaStreamQuery(stream.get()), cudaErrorNotReady);
  stream.Synchronize();
  EXPECT_EQ(result.data()[0], 30.0f);
  EXPECT_EQ(cudaStreamQuery(stream.get()), cudaSuccess);
}

TEST_F(SimTest, AnEventWaitsForItsStreamUpToTheRecord) {
  Stream stream;
  Event event;
  DeviceBuffer<float> values = DeviceBuffer<float>::FromHost(std::vector<float>(32, 1.0f));
  PinnedBuffer<float> first(32), second(32);
  first.data()[0] = second.data()[0] = -1;
  XMLT_CUDA_CHECK(cudaMemcpyAsync(first.data(), values.data(), 128, cudaMemcpyDeviceToHost, stream.get()));
  event.Record(stream.get());
  XMLT_LAUNCH(AddKernel, 1, 32, 0, stream.get())(values.data(), 5.0f);
  XMLT_CUDA_CHECK(cudaMemcpyAsync(second.data(), values.data(), 128, cudaMemcpyDeviceToHost, stream.get()));
  event.Synchronize();
  EXPECT_EQ(first.data()[0], 1.0f);
  EXPECT_EQ(second.data()[0], -1.0f) << "work after the record ran";
  stream.Synchronize();
  EXPECT_EQ(second.data()[0], 6.0f);
}

TEST_F(SimTest, AStreamWaitingOnAnEventRunsTheOtherStreamsWorkFirst) {
  Stream producer, consumer;
  Event ready;
  DeviceBuffer<float> values = DeviceBuffer<float>::FromHost(std::vector<float>(32, 1.0f));
  XMLT_LAUNCH(AddKernel, 1, 32, 0, producer.get())(values.data(), 1.0f);
  ready.Record(producer.get());
  XMLT_CUDA_CHECK(cudaStreamWaitEvent(consumer.get(), ready.get(), 0));
  XMLT_LAUNCH(ScaleKernel, 1, 32, 0, consumer.get())(values.data(), 3.0f);
  consumer.Synchronize();
  EXPECT_EQ(values.ToHost()[0], 6.0f);
}

TEST_F(SimTest, PageableCopiesTakeTheirSourceAtTheCallAndFinishIntoPageableMemoryAtOnce) {
  Stream stream;
  DeviceBuffer<float> values(4);
  std::vector<float> source = {1, 2, 3, 4}, target(4, 0.0f);
  XMLT_CUDA_CHECK(cudaMemcpyAsync(values.data(), source.data(), 16, cudaMemcpyHostToDevice, stream.get()));
  source[0] = 100;  // staged already, as the runtime documents for pageable sources
  XMLT_CUDA_CHECK(cudaMemcpyAsync(target.data(), values.data(), 16, cudaMemcpyDeviceToHost, stream.get()));
  EXPECT_EQ(target, (std::vector<float>{1, 2, 3, 4})) << "a copy into pageable memory returns when done";
}

TEST_F(SimTest, ADestroyedStreamIsRefused) {
  cudaStream_t stream = nullptr;
  ASSERT_EQ(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), cudaSuccess);
  ASSERT_EQ(cudaStreamDestroy(stream), cudaSuccess);
  EXPECT_EQ(cudaStreamSynchronize(stream), cudaErrorInvalidResourceHandle);
}

}  // namespace
}  // namespace gpusim::testing
