// How often a run's progress is shown: at most every 200 ms, and always at the end, so that a
// terminal line or a Python callback keeps up without slowing the steps that report it. The
// command line's progress line and the Python package's on_progress both ask it.
#pragma once

#include <chrono>
#include <cstdint>
#include <mutex>

namespace xmlt::apps {

class ProgressThrottle {
 public:
  // Whether the progress at `done` of `total` is to be shown now; safe from several threads.
  bool Due(uint64_t done, uint64_t total) {
    std::lock_guard<std::mutex> lock(mutex_);
    const Clock::time_point now = Clock::now();
    if (now - last_ < kInterval && done < total) return false;
    last_ = now;
    return true;
  }

 private:
  using Clock = std::chrono::steady_clock;
  static constexpr std::chrono::milliseconds kInterval{200};
  std::mutex mutex_;
  Clock::time_point last_{};
};

}  // namespace xmlt::apps
