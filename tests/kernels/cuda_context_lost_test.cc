// A sticky CUDA error loses the context of its GPU: the checking macro throws kernels::ContextLost
// for exactly those errors (a real one is provoked in a child process, whose context it poisons),
// and the scheduler then drops every logical device of that GPU together while the CPU goes on.
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <vector>

#include "data/synthetic_generator.h"
#include "kernels/context_lost.h"
#include "kernels/cuda/cuda_check.h"
#include "kernels/model.h"
#include "run/multi_device_run.h"
#include "tests/kernels/cuda_test_gate.h"
#include "tests/scheduler/scheduler_test_support.h"

#ifdef XMLT_GPUSIM
#include "gpusim/faults.h"
#include "kernels/cuda/cuda_mlp.h"
#include "kernels/cuda/device_buffer.h"
#include "merge/gpu/replica_kernels.h"
#include "tests/kernels/kernel_test_util.h"
#endif

namespace xmlt::kernels::cuda {
namespace {

// Needs no GPU: the classification and the exception each kind of error becomes.
TEST(CudaErrors, OnlyTheStickyOnesLoseTheContext) {
  for (cudaError_t e : {cudaErrorIllegalAddress, cudaErrorLaunchFailure, cudaErrorAssert, cudaErrorMisalignedAddress,
                        cudaErrorIllegalInstruction, cudaErrorECCUncorrectable})
    EXPECT_TRUE(IsStickyCudaError(e)) << cudaGetErrorName(e);
  for (cudaError_t e : {cudaSuccess, cudaErrorMemoryAllocation, cudaErrorInvalidValue, cudaErrorLaunchOutOfResources,
                        cudaErrorNoDevice, cudaErrorInsufficientDriver, cudaErrorNotReady})
    EXPECT_FALSE(IsStickyCudaError(e)) << cudaGetErrorName(e);

  try {
    XMLT_CUDA_CHECK(cudaErrorIllegalAddress);
    ADD_FAILURE() << "no exception";
  } catch (const ContextLost& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("cudaErrorIllegalAddress"), std::string::npos) << what;
    EXPECT_NE(what.find("is lost"), std::string::npos) << what;
  }
  try {
    XMLT_CUDA_CHECK(cudaErrorMemoryAllocation);
    ADD_FAILURE() << "no exception";
  } catch (const ContextLost& e) {
    ADD_FAILURE() << "out of memory leaves the context usable: " << e.what();
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("CUDA error"), std::string::npos) << e.what();
  }
}

// A kernel that writes where nothing is mapped: the error surfaces at the next synchronization as
// ContextLost, and every later call in the context fails too. In a child process of its own
// (started afresh, not forked), since the error poisons the whole process's context.
TEST(CudaContextLostDeathTest, AnIllegalAddressLosesTheContextForEveryLaterCall) {
  XMLT_SKIP_WITHOUT_GPU();
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        cublasHandle_t handle = nullptr;
        if (cublasCreate(&handle) != CUBLAS_STATUS_SUCCESS) std::_Exit(3);
        const float alpha = 2;
        float* nowhere = reinterpret_cast<float*>(uintptr_t{16});  // the null page, never mapped
        cublasSscal(handle, 1 << 16, &alpha, nowhere, 1);
        try {
          XMLT_CUDA_CHECK(cudaDeviceSynchronize());
          std::_Exit(4);  // the write went through: nothing was learnt
        } catch (const ContextLost&) {
        } catch (...) {
          std::_Exit(5);  // an error, but not taken for a lost context
        }
        void* memory = nullptr;
        std::_Exit(cudaMalloc(&memory, 256) == cudaSuccess ? 6 : 0);
      },
      ::testing::ExitedWithCode(0), "");
}

// cuda:0x2 and a CPU worker; a lost context on cuda:0.0 in mega-batch 2 takes cuda:0.1 with it.
TEST(CudaContextLost, EveryLogicalDeviceOfTheGpuIsDroppedTogetherAndTheCpuGoesOn) {
  XMLT_SKIP_WITHOUT_GPU();
  const data::GeneratedData data = xmlt::testing::NormalizedData(1200, 100, 300, 40, 10, 3);
  scheduler::TrainOptions options;
  options.epochs = 1;
  options.batch = 32;
  options.mega_batch = 6;
  options.hidden = {16};
  options.eval.kind = scheduler::EvalSchedule::Kind::kEveryMegaBatches;
  options.eval.mega_batches = 1;
  const scheduler::SchedulerOptions scheduling = xmlt::testing::VirtualClockScheduling("cuda:0x2,cpu:1", "1,1,1");
  run::RunControl control;
  control.faults = {scheduler::FaultInjection{scheduler::FaultInjection::Kind::kLost, 0, 2}};
  Model<float> model = InitModel<float>({data.train.num_features(), options.hidden, data.train.num_labels()}, 1);
  std::vector<run::EvalRecord> records;
  run::TrainCallbacks callbacks;
  callbacks.on_eval = [&](const run::EvalRecord& r) { records.push_back(r); };
  run::RunMultiDevice(data.train, &data.test, options, scheduling, &model, callbacks, control);
  ASSERT_FALSE(records.empty());
  const run::EvalRecord& last = records.back();
  ASSERT_EQ(last.devices.size(), 3u);
  EXPECT_TRUE(last.devices[0].dropped);
  EXPECT_NE(last.devices[0].fault.find("injected loss"), std::string::npos) << last.devices[0].fault;
  EXPECT_TRUE(last.devices[1].dropped);
  EXPECT_EQ(last.devices[1].fault.find("lost with cuda:0.0"), 0u) << last.devices[1].fault;
  EXPECT_FALSE(last.devices[2].dropped);
  EXPECT_EQ(last.train_samples, data.train.num_rows());  // the CPU trained the lost devices' rows
  EXPECT_GT(last.test.metrics.p1, 0.0);
}

#ifdef XMLT_GPUSIM
// On the simulated GPUs a real sticky error can be injected at any launch: the kernels', cuBLAS's
// and CUB's.

// Every launch of a training step and of a prediction: the lost context surfaces as ContextLost,
// whichever kernel or library call it hits, never as a plain error.
TEST(CudaContextLostSim, EveryLaunchOfAStepOrAPredictionThatLosesTheContextIsContextLost) {
  XMLT_SKIP_WITHOUT_GPU();
  const ModelShape shape{50, {16, 8}, 30};
  const Model<float> model = xmlt::testing::RandomModel<float>(shape, 1);
  const data::SparseBatch batch = xmlt::testing::RandomBatch(6, 50, 30, 2);
  for (bool predict : {false, true}) {
    uint64_t k = 1;
    for (;; ++k) {
      bool lost = false;
      {
        CudaMlp mlp(0, shape, 8, 64, 32, Math::kFp32);
        mlp.UploadParams(model.params.data(), model.params.size());
        gpusim::InjectStickyErrorAtLaunch(k, cudaErrorIllegalAddress, 0);
        try {
          std::vector<uint32_t> top(6 * 5);
          if (predict) {
            mlp.Predict(batch, 5, top.data(), nullptr, nullptr);
          } else {
            mlp.TrainBatch(batch, 0.1f, 0.9f);
          }
        } catch (const ContextLost&) {
          lost = true;
        } catch (const std::exception& e) {
          // Failed before reaching launch k, or took the lost context for something else: either
          // way the search ends here.
          ADD_FAILURE() << (predict ? "predict" : "train") << ", launch " << k << ": not ContextLost: " << e.what();
        }
      }
      gpusim::ClearInjectedFaults();
      cudaSetDevice(0);
      cudaDeviceReset();
      if (!lost) break;  // the step has fewer than k launches
    }
    EXPECT_GT(k, predict ? 5u : 10u) << "launches counted in one " << (predict ? "prediction" : "step");
  }
}

// cuda:0x2 and a CPU worker; a real sticky error on GPU 0 (its 20th launch, inside the training)
// drops both logical devices of GPU 0 and the CPU trains on.
TEST(CudaContextLostSim, ARealStickyErrorDropsTheGpusDevicesAndTheCpuGoesOn) {
  XMLT_SKIP_WITHOUT_GPU();
  const data::GeneratedData data = xmlt::testing::NormalizedData(1200, 100, 300, 40, 10, 3);
  scheduler::TrainOptions options;
  options.epochs = 1;
  options.batch = 32;
  options.mega_batch = 6;
  options.hidden = {16};
  options.eval.kind = scheduler::EvalSchedule::Kind::kEveryMegaBatches;
  options.eval.mega_batches = 1;
  const scheduler::SchedulerOptions scheduling = xmlt::testing::VirtualClockScheduling("cuda:0x2,cpu:1", "1,1,1");
  Model<float> model = InitModel<float>({data.train.num_features(), options.hidden, data.train.num_labels()}, 1);
  std::vector<run::EvalRecord> records;
  run::TrainCallbacks callbacks;
  callbacks.on_eval = [&](const run::EvalRecord& r) { records.push_back(r); };
  gpusim::InjectStickyErrorAtLaunch(20, cudaErrorIllegalAddress, 0);
  run::RunMultiDevice(data.train, &data.test, options, scheduling, &model, callbacks, run::RunControl{});
  gpusim::ClearInjectedFaults();
  cudaSetDevice(0);
  cudaDeviceReset();  // a fresh context for the tests after this one in the same process
  ASSERT_FALSE(records.empty());
  const run::EvalRecord& last = records.back();
  ASSERT_EQ(last.devices.size(), 3u);
  EXPECT_TRUE(last.devices[0].dropped);
  EXPECT_TRUE(last.devices[1].dropped);
  EXPECT_NE(last.devices[0].fault.find("lost") , std::string::npos) << last.devices[0].fault;
  EXPECT_FALSE(last.devices[2].dropped);
  EXPECT_EQ(last.train_samples, data.train.num_rows());
  EXPECT_GT(last.test.metrics.p1, 0.0);
}

// An error already reported (thrown), or deliberately left unreported (a buffer of a lost GPU
// released, the query of whether a context is lost), is not reported again by the next launch
// check of the same thread on a live GPU. A survivor of a lost GPU otherwise failed its first
// merge kernel as if its own context were lost.
TEST(CudaContextLostSim, AnErrorHandledOnceDoesNotFailTheNextLaunchOnALiveGpu) {
  XMLT_SKIP_WITHOUT_GPU();
  int gpus = 0;
  ASSERT_EQ(cudaGetDeviceCount(&gpus), cudaSuccess);
  if (gpus < 2) GTEST_SKIP() << "needs 2 GPUs";
  ASSERT_EQ(cudaSetDevice(0), cudaSuccess);
  const std::vector<float> ones(64, 1.0f);
  DeviceBuffer<float> acc = DeviceBuffer<float>::FromHost(ones);
  const DeviceBuffer<float> received = DeviceBuffer<float>::FromHost(ones);
  Stream live;
  const auto launch_on_gpu0 = [&] {
    merge::gpu::LaunchAdd(live.get(), acc.data(), received.data(), ones.size());
    live.Synchronize();
  };
  {
    DeviceGuard on_gpu1(1);
    DeviceBuffer<float> lost_acc = DeviceBuffer<float>::FromHost(ones);
    Stream lost;
    gpusim::InjectStickyErrorAtLaunch(1, cudaErrorIllegalAddress, 1);
    merge::gpu::LaunchAdd(lost.get(), lost_acc.data(), lost_acc.data(), ones.size());
    EXPECT_THROW(lost.Synchronize(), ContextLost);
  }  // GPU 1's buffer and stream released, on GPU 0 again
  EXPECT_NO_THROW(launch_on_gpu0()) << "after a lost GPU's error was thrown and its buffers released";

  gpusim::InjectOutOfMemoryAtAllocation(1, 0);
  EXPECT_THROW(DeviceBuffer<float>(64), std::runtime_error);
  EXPECT_NO_THROW(launch_on_gpu0()) << "after a failed allocation was thrown";
  EXPECT_EQ(acc.ToHost()[0], 3.0f);

  gpusim::ClearInjectedFaults();
  cudaSetDevice(1);
  cudaDeviceReset();  // a fresh context for the tests after this one in the same process
  cudaSetDevice(0);
}
#endif

}  // namespace
}  // namespace xmlt::kernels::cuda
