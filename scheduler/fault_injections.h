// Injected device faults (the command line's --inject-fault, for tests and drills): which batch
// of which device fails, and how. Each injection fires once, on the device's first batch of its
// mega-batch or, if it gets none there, on its next batch after it.
#pragma once

#include <cstdint>
#include <vector>

#include "engine/worker.h"

namespace xmlt::scheduler {

// Device I fails (kFail) or reports a NaN loss (kNaN: a divergence) on its first batch of
// mega-batch K (1-based) or, if it gets none there, on its next batch after it.
struct FaultInjection {
  // fail: the device breaks; nan: its loss diverges; exit: its process ends (a dying rank); lost:
  // it fails as a GPU whose context is lost, taking every logical device of its GPU with it.
  // The numbers are kept in checkpoints.
  enum class Kind { kFail = 0, kNaN = 1, kExit = 2, kLost = 3 } kind = Kind::kFail;
  size_t device = 0;
  uint64_t megabatch = 0;
};

// The injections not yet fired, over `devices` devices (an injection for another device throws
// OptionError).
class FaultInjections {
 public:
  FaultInjections(std::vector<FaultInjection> pending, size_t devices);

  // Starts mega-batch `index` (1-based; a rolled-back one is started again): injections due by
  // then fire, at most one per device per start.
  void BeginMegaBatch(uint64_t index);
  // Marks `task`, a batch for `device`, with the injection due on it, if any, and uses it up.
  void Arm(size_t device, engine::BatchTask* task);

  const std::vector<FaultInjection>& pending() const { return pending_; }
  void Restore(std::vector<FaultInjection> pending) { pending_ = std::move(pending); }

 private:
  std::vector<FaultInjection> pending_;  // injections not yet fired
  size_t devices_;
  uint64_t index_ = 0;          // the mega-batch being trained
  std::vector<bool> injected_;  // per device: an injection fired in this start
};

}  // namespace xmlt::scheduler
