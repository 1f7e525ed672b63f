// Signal handling for a safe stop; see stop_signals.h.
#include "apps/stop_signals.h"

#include <unistd.h>

namespace xmlt::apps {
namespace {

std::atomic<int> g_requested{0};
std::atomic<bool> g_second_exits{true};
static_assert(std::atomic<int>::is_always_lock_free && std::atomic<bool>::is_always_lock_free,
              "the handler may only touch lock-free atomics");

void OnSignal(int signal) {
  int expected = 0;
  if (!g_requested.compare_exchange_strong(expected, signal)) {
    if (g_second_exits.load()) _exit(128 + expected);
    return;
  }
  // Only async-signal-safe calls here: write(2), not iostreams.
  static const char kExits[] =
      "\nstopping at the next safe point (a checkpoint is written if --checkpoint-dir is set); "
      "signal again to exit at once\n";
  static const char kStays[] =
      "\nstopping at the next safe point (a checkpoint is written if checkpoint_dir is set)\n";
  const bool exits = g_second_exits.load();
  const ssize_t ignored = write(STDERR_FILENO, exits ? kExits : kStays, (exits ? sizeof kExits : sizeof kStays) - 1);
  (void)ignored;
}

}  // namespace

StopSignals::StopSignals(bool second_exits) {
  g_requested.store(0);
  g_second_exits.store(second_exits);
  struct sigaction action{};
  action.sa_handler = OnSignal;
  sigemptyset(&action.sa_mask);
  sigaction(SIGINT, &action, &previous_int_);
  sigaction(SIGTERM, &action, &previous_term_);
  sigaction(SIGHUP, &action, &previous_hup_);
  // Only while training: predict, eval and info keep the default, and end quietly in a pipe whose
  // reader is gone, as filters do; they have no progress to lose.
  struct sigaction ignore{};
  ignore.sa_handler = SIG_IGN;
  sigemptyset(&ignore.sa_mask);
  sigaction(SIGPIPE, &ignore, &previous_pipe_);
}

StopSignals::~StopSignals() {
  sigaction(SIGINT, &previous_int_, nullptr);
  sigaction(SIGTERM, &previous_term_, nullptr);
  sigaction(SIGHUP, &previous_hup_, nullptr);
  sigaction(SIGPIPE, &previous_pipe_, nullptr);
}

const std::atomic<int>& StopSignals::requested() const { return g_requested; }

void StopSignals::Request(int code) {
  int expected = 0;
  g_requested.compare_exchange_strong(expected, code);
}

}  // namespace xmlt::apps
