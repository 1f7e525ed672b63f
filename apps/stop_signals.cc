// Signal handling for a safe stop; see stop_signals.h.
#include "apps/stop_signals.h"

#include <unistd.h>

#include <mutex>
#include <stdexcept>
#include <string>

namespace xmlt::apps {
namespace {

// The stops of the runs in this process. The handler may only touch lock-free atomics, and may
// run while a run ends on another thread: the stops live as long as the process, and a run takes
// a free one and gives it back.
struct RunStop {
  std::atomic<bool> used{false};
  std::atomic<int> requested{0};
  std::atomic<bool> second_exits{true};
};
RunStop g_stops[StopSignals::kMaxRuns];
// Taking and giving back a stop, and the handlers (never in the handler). The handlers found when
// the first run began are put back when the last ends: a run that restored what it had found
// itself, ending before a run that began after it, would leave xmltrain's handler to that run,
// which then put it back for good (Ctrl-C no longer reached Python).
std::mutex g_stops_mutex;
int g_runs = 0;
struct sigaction g_previous_int{}, g_previous_term{}, g_previous_hup{}, g_previous_usr1{}, g_previous_pipe{};
static_assert(std::atomic<int>::is_always_lock_free && std::atomic<bool>::is_always_lock_free,
              "the handler may only touch lock-free atomics");

void OnSignal(int signal);

void InstallHandlers() {
  struct sigaction action{};
  action.sa_handler = OnSignal;
  sigemptyset(&action.sa_mask);
  sigaction(SIGINT, &action, &g_previous_int);
  sigaction(SIGTERM, &action, &g_previous_term);
  sigaction(SIGHUP, &action, &g_previous_hup);
  // What mpirun forwards to every rank as it is (Open MPI's SIGINT and SIGTERM kill the ranks a
  // second later), and what batch schedulers send ahead of a time limit.
  sigaction(SIGUSR1, &action, &g_previous_usr1);
  // Only while training: predict, eval and info keep the default, and end quietly in a pipe whose
  // reader is gone, as filters do; they have no progress to lose.
  struct sigaction ignore{};
  ignore.sa_handler = SIG_IGN;
  sigemptyset(&ignore.sa_mask);
  sigaction(SIGPIPE, &ignore, &g_previous_pipe);
}

void RestoreHandlers() {
  sigaction(SIGINT, &g_previous_int, nullptr);
  sigaction(SIGTERM, &g_previous_term, nullptr);
  sigaction(SIGHUP, &g_previous_hup, nullptr);
  sigaction(SIGUSR1, &g_previous_usr1, nullptr);
  sigaction(SIGPIPE, &g_previous_pipe, nullptr);
}

void OnSignal(int signal) {
  bool stopping = false, exits = false;
  for (RunStop& stop : g_stops) {
    if (!stop.used.load()) continue;
    int expected = 0;
    if (stop.requested.compare_exchange_strong(expected, signal)) {
      stopping = true;
      exits = exits || stop.second_exits.load();
    } else if (stop.second_exits.load()) {
      _exit(128 + expected);
    }
  }
  if (!stopping) return;
  // Only async-signal-safe calls here: write(2), not iostreams.
  static const char kExits[] =
      "\nstopping at the next safe point (a checkpoint is written if --checkpoint-dir is set); "
      "signal again to exit at once\n";
  static const char kStays[] =
      "\nstopping at the next safe point (a checkpoint is written if checkpoint_dir is set)\n";
  const ssize_t ignored = write(STDERR_FILENO, exits ? kExits : kStays, (exits ? sizeof kExits : sizeof kStays) - 1);
  (void)ignored;
}

}  // namespace

StopSignals::StopSignals(bool second_exits) {
  std::lock_guard<std::mutex> lock(g_stops_mutex);
  for (int i = 0; i < kMaxRuns && slot_ < 0; ++i)
    if (!g_stops[i].used.load()) slot_ = i;
  if (slot_ < 0)
    throw std::runtime_error("more than " + std::to_string(kMaxRuns) +
                             " runs training at once in this process; wait for one to end");
  RunStop& stop = g_stops[slot_];
  stop.requested.store(0);
  stop.second_exits.store(second_exits);
  stop.used.store(true);  // last: the handler sees a fresh stop
  if (g_runs++ == 0) InstallHandlers();
}

StopSignals::~StopSignals() {
  std::lock_guard<std::mutex> lock(g_stops_mutex);
  if (--g_runs == 0) RestoreHandlers();
  g_stops[slot_].used.store(false);
}

const std::atomic<int>& StopSignals::requested() const { return g_stops[slot_].requested; }

void StopSignals::Request(int code) {
  int expected = 0;
  g_stops[slot_].requested.compare_exchange_strong(expected, code);
}

}  // namespace xmlt::apps
