// What keeps a long run safe: checkpoints, resuming, stopping on a signal, rolling back after a
// divergence, and (for tests and drills) injected device faults.
#pragma once

#include <atomic>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace xmlt::scheduler {

// An injected fault (the command line's --inject-fault): device I fails (kFail) or reports a NaN
// loss (kNaN: a divergence) on its first batch of mega-batch K (1-based) or, if it gets none
// there, on its next batch after it. Each injection fires once.
struct FaultInjection {
  // fail: the device breaks; nan: its loss diverges; exit: its process ends (a dying rank); lost:
  // it fails as a GPU whose context is lost, taking every logical device of its GPU with it.
  // The numbers are kept in checkpoints.
  enum class Kind { kFail = 0, kNaN = 1, kExit = 2, kLost = 3 } kind = Kind::kFail;
  size_t device = 0;
  uint64_t megabatch = 0;
};

// A run that could not go on (a divergence past the rollbacks, or no device left), after
// checkpointing its last good state where RunControl::checkpoint_dir says (empty: nowhere). The
// command line says how to go on, in its flags.
class RunStopped : public std::runtime_error {
 public:
  enum class Why { kDiverged, kNoDevice };
  RunStopped(Why why, const std::string& what, std::string checkpoint_dir)
      : std::runtime_error(what), why_(why), checkpoint_dir_(std::move(checkpoint_dir)) {}
  Why why() const { return why_; }
  const std::string& checkpoint_dir() const { return checkpoint_dir_; }

 private:
  Why why_;
  std::string checkpoint_dir_;
};

struct RunControl {
  std::string checkpoint_dir;      // empty: no checkpoints
  uint32_t checkpoint_every = 0;   // mega-batches between checkpoints; 0: only at the end and on a stop
  std::string resume_dir;          // continue the run checkpointed there
  uint32_t max_rollbacks = 3;      // divergences this process survives before the run stops
  std::vector<FaultInjection> faults;
  // Set (to the signal's number) by a signal handler: the run stops at the next safe point, after
  // a checkpoint when checkpoint_dir is set.
  const std::atomic<int>* stop_signal = nullptr;
};

}  // namespace xmlt::scheduler
