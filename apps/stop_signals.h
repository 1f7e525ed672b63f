// SIGINT and SIGTERM during training: the first asks the run to stop at its next safe point
// (it checkpoints and exits with 128 + the signal: 130 or 143); a second one exits at once with
// the same code. Checkpoints are replaced by an atomic rename, so even that leaves the previous
// checkpoint intact.
#pragma once

#include <atomic>
#include <csignal>

namespace xmlt::apps {

class StopSignals {
 public:
  StopSignals();   // installs the handlers
  ~StopSignals();  // restores the previous ones
  StopSignals(const StopSignals&) = delete;
  StopSignals& operator=(const StopSignals&) = delete;

  // The signal received (0 while none), for RunControl::stop_signal.
  const std::atomic<int>& requested() const;

  // Asks for the same stop as a first signal, for a cause that is not one (stdout that can no
  // longer be written); requested() then reads `code`. Does nothing when a stop is already asked.
  static void Request(int code);

 private:
  struct sigaction previous_int_{}, previous_term_{};
};

}  // namespace xmlt::apps
