// The mirror of another rank's device: it never trains, and it holds memory only from the first
// time a merge or a checkpoint asks for its parameters until it is released.
#include <gtest/gtest.h>

#include <stdexcept>

#include "engine/device_spec.h"
#include "engine/remote_device.h"

namespace xmlt::engine {
namespace {

TEST(RemoteDevice, HoldsAReplicaOnlyWhileAskedForAndNeverTrains) {
  kernels::Model<float> initial = kernels::InitModel<float>(kernels::ModelShape{50, {8}, 30}, 1);
  const DeviceSpec spec = ParseDeviceList("cpu:1").at(0);
  std::unique_ptr<Device> mirror = MakeRemoteDevice(spec, initial);
  EXPECT_EQ(mirror->NumParams(), initial.params.size());
  EXPECT_TRUE(mirror->SaveOptimizerState().empty());

  // Asked for, it is the model's size and zeroed until its owner shares the replica.
  float* params = mirror->HostParams();
  for (size_t j = 0; j < mirror->NumParams(); ++j) ASSERT_EQ(params[j], 0.0f) << j;
  params[3] = 2.5f;
  mirror->RestoreOptimizerState(std::vector<float>(mirror->NumParams(), 1.0f));
  EXPECT_EQ(mirror->HostParams()[3], 2.5f) << "a second ask must not clear what was shared";
  EXPECT_EQ(mirror->SaveOptimizerState().size(), mirror->NumParams());

  mirror->ReleaseMirror();
  EXPECT_TRUE(mirror->SaveOptimizerState().empty());
  EXPECT_EQ(mirror->NumParams(), initial.params.size());
  EXPECT_EQ(mirror->HostParams()[3], 0.0f) << "released, then asked for again: zeros";

  const uint64_t row = 0;
  EXPECT_THROW(mirror->TrainBatch(data::Dataset{}, &row, 1, 0.1f), std::logic_error);
}

}  // namespace
}  // namespace xmlt::engine
