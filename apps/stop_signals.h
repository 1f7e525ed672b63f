// SIGINT, SIGTERM, SIGHUP (a dropped ssh session) and SIGUSR1 (what mpirun forwards to every
// rank, and batch schedulers send ahead of a time limit) during training: the first asks the run
// to stop at its next safe point (it checkpoints and exits with 128 + the signal: 130, 143, 129 or
// 138); a second one exits at once with the same code. Checkpoints are replaced by an atomic rename, so
// even that leaves the previous checkpoint intact. SIGPIPE is ignored while training: a closed
// output pipe (`train ... | head`) is then a failed write, which the run treats as an output error
// and stops at a safe point, instead of dying with its progress lost.
//
// Each run has a stop of its own. Several runs may train at once in one process (threads of a
// Python interpreter): a signal, which is the whole process's, stops every one of them, while a
// stop a run asks for itself (Request: a callback that raised, a stdout that failed) stops that
// run alone. The handlers are installed by the first of the runs alive at once and the ones found
// then are put back when the last of them ends, whichever order they end in.
#pragma once

#include <atomic>
#include <csignal>

namespace xmlt::apps {

class StopSignals {
 public:
  // Runs that may hold a stop at once in one process; one more is refused (std::runtime_error).
  static constexpr int kMaxRuns = 64;

  // Takes a stop for this run, and installs the handlers unless another run has. `second_exits`: a second signal ends the
  // process at once (the command line); false: it is taken as the first was (an interpreter
  // calling a run must outlive it).
  explicit StopSignals(bool second_exits = true);
  ~StopSignals();  // gives the stop back; the last run alive restores the previous handlers
  StopSignals(const StopSignals&) = delete;
  StopSignals& operator=(const StopSignals&) = delete;

  // The signal received (0 while none), for RunControl::stop_signal: this run's stop.
  const std::atomic<int>& requested() const;

  // Asks this run alone for the same stop as a first signal, for a cause that is not one (stdout
  // that can no longer be written); requested() then reads `code`. Does nothing when a stop is
  // already asked.
  void Request(int code);

 private:
  int slot_ = -1;  // this run's stop among the process's (stop_signals.cc)
};

}  // namespace xmlt::apps
