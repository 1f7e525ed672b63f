// Training on one device; see one_device_run.h.
#include "run/one_device_run.h"

#include "run/multi_device_run.h"

namespace xmlt::run {

scheduler::SchedulerOptions SingleDeviceScheduling(const engine::DeviceSpec& device) {
  scheduler::SchedulerOptions scheduling;
  scheduling.devices = {device};
  scheduling.schedule = scheduler::SchedulerOptions::Schedule::kDynamic;
  scheduling.scale_batches = false;
  scheduling.merge = scheduler::SchedulerOptions::Merge::kCopy;
  scheduling.merge_rule.momentum = 0;
  scheduling.merge_rule.elastic_alpha = 0;
  scheduling.heterogeneity = {};
  scheduling.clock = scheduler::SchedulerOptions::Clock::kWall;
  return scheduling;
}

TrainResult TrainOnOneDevice(const data::Dataset& train, const data::Dataset* test,
                             const scheduler::TrainOptions& options, kernels::Model<float>* model, const TrainCallbacks& callbacks, const RunControl& control) {
  return RunMultiDevice(train, test, options, SingleDeviceScheduling(), model, callbacks, control);
}

}  // namespace xmlt::run
