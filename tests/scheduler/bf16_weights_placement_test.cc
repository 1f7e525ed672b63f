// Where a run's devices may keep their weights in bf16 (scheduler::MergesBf16Weights): devices of
// the dense step whose merges run on the host. CPUs, GPUs merged on the host through bf16 mirrors
// and a mix of both, on one rank or several; not GPUs merged on the GPUs, whose merges read fp32
// replicas in place, nor the sampled step. ValidateBf16Weights refuses the rest, and fp32 products.
#include <gtest/gtest.h>

#include "engine/device_spec.h"
#include "scheduler/train_options.h"

namespace xmlt::scheduler {
namespace {

SchedulerOptions On(const std::string& devices, SchedulerOptions::MergeOn merge_on = SchedulerOptions::MergeOn::kAuto) {
  SchedulerOptions scheduling;
  scheduling.devices = engine::ParseDeviceList(devices);
  scheduling.merge_on = merge_on;
  return scheduling;
}

TEST(Bf16WeightsPlacement, TheDenseStepMergedOnTheHost) {
  using MergeOn = SchedulerOptions::MergeOn;
  EXPECT_TRUE(MergesBf16Weights(On("cpu:1")));
  EXPECT_TRUE(MergesBf16Weights(On("cpu:3")));
  EXPECT_TRUE(MergesBf16Weights(On("cuda:0,cuda:1", MergeOn::kHost)));
  EXPECT_TRUE(MergesBf16Weights(On("cuda:0,cpu:2"))) << "a mix of devices merges on the host";
  EXPECT_FALSE(MergesBf16Weights(On("cuda:0,cuda:1"))) << "merged on the GPUs, in fp32";
  EXPECT_FALSE(MergesBf16Weights(On("cuda:0,cuda:1", MergeOn::kGpus)));
  SchedulerOptions across_ranks = On("cpu:1,cuda:0");
  across_ranks.device_rank = {0, 1};
  EXPECT_TRUE(MergesBf16Weights(across_ranks));
  SchedulerOptions sampled = On("cpu:2");
  sampled.sampled_output.enabled = true;
  EXPECT_FALSE(MergesBf16Weights(sampled));
}

TEST(Bf16WeightsPlacement, ValidationRefusesTheRestAndFp32Products) {
  TrainOptions options;
  options.bf16_weights = true;
  options.math = kernels::OutputMath::kBf16;
  EXPECT_NO_THROW(ValidateBf16Weights(options, On("cuda:0,cuda:1", SchedulerOptions::MergeOn::kHost)));
  try {
    ValidateBf16Weights(options, On("cuda:0,cuda:1"));
    FAIL() << "bf16 weights merged on the GPUs";
  } catch (const OptionError& e) {
    EXPECT_EQ(e.setting(), "weights");
    EXPECT_NE(std::string(e.what()).find("merges run on the host"), std::string::npos) << e.what();
  }
  options.math = kernels::OutputMath::kFp32;
  EXPECT_THROW(ValidateBf16Weights(options, On("cpu:2")), OptionError);
  options.bf16_weights = false;
  EXPECT_NO_THROW(ValidateBf16Weights(options, On("cuda:0,cuda:1")));
}

}  // namespace
}  // namespace xmlt::scheduler
