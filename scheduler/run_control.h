// What keeps a long run safe: checkpoints, resuming, stopping on a signal, rolling back after a
// divergence, and (for tests and drills) injected device faults.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

namespace xmlt::scheduler {

// --inject-fault device=I,megabatch=K[,kind=fail|nan]: device I fails (kind=fail, the default)
// or reports a NaN loss (kind=nan: a divergence) on its first batch of mega-batch K (1-based) or,
// if it gets none there, on its next batch after it. Each injection fires once.
struct FaultInjection {
  enum class Kind { kFail, kNaN } kind = Kind::kFail;
  size_t device = 0;
  uint64_t megabatch = 0;
};

// Parses the flag's value; throws std::invalid_argument naming the flag.
FaultInjection ParseFaultInjection(const std::string& text);

struct RunControl {
  std::string checkpoint_dir;      // empty: no checkpoints
  uint32_t checkpoint_every = 0;   // mega-batches between checkpoints; 0: only at the end and on a stop
  std::string resume_dir;          // continue the run checkpointed there
  uint32_t max_rollbacks = 3;      // divergences survived before the run stops
  std::vector<FaultInjection> faults;
  // Set (to the signal's number) by a signal handler: the run stops at the next safe point, after
  // a checkpoint when checkpoint_dir is set.
  const std::atomic<int>* stop_signal = nullptr;
};

}  // namespace xmlt::scheduler
