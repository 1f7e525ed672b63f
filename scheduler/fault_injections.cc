// Injected device faults; see fault_injections.h.
#include "scheduler/fault_injections.h"

#include <string>

#include "scheduler/train_options.h"

namespace xmlt::scheduler {

FaultInjections::FaultInjections(std::vector<FaultInjection> pending, size_t devices)
    : pending_(std::move(pending)), devices_(devices) {
  for (const FaultInjection& fault : pending_)
    if (fault.device >= devices)
      throw OptionError("inject_fault", "device " + std::to_string(fault.device) + " does not exist (" +
                                            std::to_string(devices) + " devices)");
}

void FaultInjections::BeginMegaBatch(uint64_t index) {
  index_ = index;
  injected_.assign(devices_, false);
}

void FaultInjections::Arm(size_t device, engine::BatchTask* task) {
  if (injected_.size() != devices_) injected_.assign(devices_, false);
  for (auto it = pending_.begin(); it != pending_.end() && !injected_[device]; ++it) {
    if (it->device == device && it->megabatch <= index_) {
      injected_[device] = true;
      switch (it->kind) {
        case FaultInjection::Kind::kNaN: task->inject_nan = true; break;
        case FaultInjection::Kind::kFail: task->inject_fault = true; break;
        case FaultInjection::Kind::kExit: task->inject_exit = true; break;
        case FaultInjection::Kind::kLost: task->inject_lost = true; break;
      }
      pending_.erase(it);
      break;
    }
  }
}

}  // namespace xmlt::scheduler
