// What keeps a long run safe: checkpoints, resuming, stopping on a signal, rolling back after a
// divergence, and (for tests and drills) injected device faults.
#pragma once

#include <atomic>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <vector>

#include "data/dataset.h"
#include "run/holdout_stop.h"
#include "scheduler/fault_injections.h"

namespace xmlt::run {

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
  std::vector<scheduler::FaultInjection> faults;
  // Set (to the signal's number) by a signal handler: the run stops at the next safe point, after
  // a checkpoint when checkpoint_dir is set.
  const std::atomic<int>* stop_signal = nullptr;
  // Rows held out of training (the ranker's): when given, the run scores them at the end of each
  // epoch of its annealed tail and stops there once they stop gaining (run/holdout_stop.h). Null:
  // the planned epochs, always.
  const data::Dataset* stop_holdout = nullptr;
  HoldoutStopRule holdout_rule;  // the defaults, in the engine; tests make it stop sooner
  // Settings of the run decided around the loop, which RunFingerprint cannot see (the ranker's
  // held-out rows, how the learning rate scaled), by name: checkpoints record them with the loop's
  // own, and a resume must share them as it shares those. A checkpoint that records none of them
  // was written before they were recorded, and is not held to them.
  nlohmann::json outer_settings = nlohmann::json::object();
  // Notes on settings, by name (how the learning rate came from the flags): recorded, shown beside
  // the values of a refused resume, never compared.
  nlohmann::json notes = nlohmann::json::object();
};

}  // namespace xmlt::run
