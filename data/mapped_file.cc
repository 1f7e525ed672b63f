// RAII read-only mmap, and the SIGBUS handler that keeps a shortened file from killing its
// reader; see mapped_file.h.
#include "data/mapped_file.h"

#include <signal.h>
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <mutex>

#include "data/input_error.h"
#include "data/regular_file.h"

namespace xmlt::data {
namespace {

// The live mappings, read by the handler without locks: a slot is published by storing its end
// last and retired by clearing its begin first. A run maps a few files at a time; past the table's
// size a mapping goes unguarded, as every mapping did before.
struct GuardedRange {
  std::atomic<uintptr_t> begin{0}, end{0};
  std::atomic<bool> faulted{false};
};
constexpr int kGuardedRanges = 256;
GuardedRange g_ranges[kGuardedRanges];
std::mutex g_slots_mutex;  // taking and freeing slots (not used by the handler)
struct sigaction g_previous_action;
uintptr_t g_page_size = 4096;  // read once, before the handler is installed (sysconf is not signal-safe)

void PassOn(int signal, siginfo_t* info, void* context) {
  const struct sigaction& previous = g_previous_action;
  if ((previous.sa_flags & SA_SIGINFO) != 0 && previous.sa_sigaction != nullptr) {
    previous.sa_sigaction(signal, info, context);
    return;
  }
  if (previous.sa_handler != SIG_DFL && previous.sa_handler != SIG_IGN) {
    previous.sa_handler(signal);
    return;
  }
  // The default action, as without this handler: the signal raised again is delivered when the
  // handler returns (a sent SIGBUS would not come back by itself; a fault would, re-run).
  ::signal(SIGBUS, SIG_DFL);
  ::raise(SIGBUS);
}

void OnSigbus(int signal, siginfo_t* info, void* context) {
  const uintptr_t address = reinterpret_cast<uintptr_t>(info->si_addr);
  for (GuardedRange& range : g_ranges) {
    const uintptr_t begin = range.begin.load(std::memory_order_acquire);
    if (begin == 0 || address < begin || address >= range.end.load(std::memory_order_acquire)) continue;
    // Past the file's new end: a page of zeros in its place (mmap is a plain system call, safe
    // here), so that the access that faulted reads zeros when it runs again.
    void* page = reinterpret_cast<void*>(address & ~(g_page_size - 1));
    if (::mmap(page, g_page_size, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) == MAP_FAILED) break;
    range.faulted.store(true, std::memory_order_release);
    return;
  }
  PassOn(signal, info, context);
}

void InstallHandler() {
  static std::once_flag installed;
  std::call_once(installed, [] {
    g_page_size = uintptr_t(::sysconf(_SC_PAGESIZE));
    struct sigaction action {};
    action.sa_sigaction = OnSigbus;
    action.sa_flags = SA_SIGINFO;
    sigemptyset(&action.sa_mask);
    ::sigaction(SIGBUS, &action, &g_previous_action);
  });
}

int Guard(const char* data, size_t size) {
  InstallHandler();
  const uintptr_t begin = reinterpret_cast<uintptr_t>(data);
  const uintptr_t end = (begin + size + g_page_size - 1) & ~(g_page_size - 1);
  std::lock_guard<std::mutex> lock(g_slots_mutex);
  for (int slot = 0; slot < kGuardedRanges; ++slot) {
    GuardedRange& range = g_ranges[slot];
    if (range.begin.load(std::memory_order_relaxed) != 0) continue;
    range.faulted.store(false, std::memory_order_relaxed);
    range.end.store(end, std::memory_order_release);
    range.begin.store(begin, std::memory_order_release);
    return slot;
  }
  return -1;
}

void Unguard(int slot) {
  if (slot < 0) return;
  std::lock_guard<std::mutex> lock(g_slots_mutex);
  g_ranges[slot].begin.store(0, std::memory_order_release);
  g_ranges[slot].end.store(0, std::memory_order_release);
}

}  // namespace

std::shared_ptr<const MappedFile> MappedFile::Open(const std::string& path, bool populate) {
  size_t size = 0;
  const int fd = OpenRegularFile(path, &size);
  if (size == 0) {
    ::close(fd);
    return std::shared_ptr<const MappedFile>(new MappedFile(nullptr, 0, -1));
  }
  const int flags = MAP_PRIVATE | (populate ? MAP_POPULATE : 0);
  void* address = ::mmap(nullptr, size, PROT_READ, flags, fd, 0);
  const int error = errno;
  ::close(fd);  // the mapping stays valid without the descriptor
  if (address == MAP_FAILED) {
    throw InputError(path, 0, std::string("cannot map: ") + std::strerror(error));
  }
  if (!populate) ::madvise(address, size, MADV_WILLNEED);
  const char* data = static_cast<const char*>(address);
  return std::shared_ptr<const MappedFile>(new MappedFile(data, size, Guard(data, size)));
}

bool MappedFile::faulted() const {
  return guard_ >= 0 && g_ranges[guard_].faulted.load(std::memory_order_acquire);
}

MappedFile::~MappedFile() {
  Unguard(guard_);  // before the pages go, so that the handler never claims another's fault
  if (data_ != nullptr) ::munmap(const_cast<char*>(data_), size_);
}

}  // namespace xmlt::data
