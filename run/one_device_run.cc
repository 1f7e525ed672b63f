// Training on one device; see one_device_run.h.
#include "run/one_device_run.h"

#include "run/multi_device_run.h"

namespace xmlt::run {

scheduler::EngineOptions SingleDeviceEngine(const engine::DeviceSpec& device) {
  scheduler::EngineOptions engine;
  engine.devices = {device};
  engine.schedule = scheduler::EngineOptions::Schedule::kDynamic;
  engine.scale_batches = false;
  engine.merge = scheduler::EngineOptions::Merge::kCopy;
  engine.merge_rule.momentum = 0;
  engine.merge_rule.elastic_alpha = 0;
  engine.heterogeneity = {};
  engine.clock = scheduler::EngineOptions::Clock::kWall;
  return engine;
}

TrainResult TrainOnOneDevice(const data::Dataset& train, const data::Dataset* test,
                             const scheduler::TrainOptions& options, kernels::Model<float>* model, const TrainCallbacks& callbacks, const RunControl& control) {
  return RunMultiDevice(train, test, options, SingleDeviceEngine(), model, callbacks, control);
}

}  // namespace xmlt::run
