// Runs over a mixed list of GPUs and CPUs repeat exactly: the same flags give the same records and
// the same model, bit for bit, however the devices' threads happened to interleave. Three or more
// devices with a GPU among them, where the host merge reads a GPU's mirror beside CPU replicas.
#include <gtest/gtest.h>
#include <tbb/global_control.h>

#include <algorithm>
#include <string>
#include <vector>

#include "engine/device_query.h"
#include "engine/device_spec.h"
#include "tests/run/reliability_support.h"

namespace xmlt::run {
namespace {

using namespace reliability;

class MixedDevicesRepeat : public ::testing::TestWithParam<const char*> {};

TEST_P(MixedDevicesRepeat, TwoRunsGiveTheSameModel) {
  const std::vector<engine::DeviceSpec> devices = engine::ParseDeviceList(GetParam());
  int gpus_needed = 0;
  for (const engine::DeviceSpec& d : devices)
    if (d.kind == engine::DeviceKind::kCuda) gpus_needed = std::max(gpus_needed, d.ordinal + 1);
  if (engine::CudaDeviceCount() < gpus_needed)
    GTEST_SKIP() << "needs " << gpus_needed << " GPUs (a CUDA or -DXMLT_CUDA=SIM build)";
  tbb::global_control one_thread(tbb::global_control::max_allowed_parallelism, 1);
  const scheduler::SchedulerOptions scheduling = OnDevices(Scheduling("adaptive"), GetParam(), "1,1.3,1.8");
  const Outcome first = TrainFor(Options(), &scheduling, {});
  const Outcome second = TrainFor(Options(), &scheduling, {});
  ExpectSameRun(first, second, /*wall_clock_steps=*/false);
}

INSTANTIATE_TEST_SUITE_P(Lists, MixedDevicesRepeat,
                         ::testing::Values("cuda:0,cpu:2", "cuda:0x2,cpu:1", "cuda:0,cuda:1,cpu:1"));

}  // namespace
}  // namespace xmlt::run
