// Fault injection; see faults.h.
#include "gpusim/faults.h"

#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <stdexcept>

namespace gpusim {
namespace {

struct Trigger {
  bool armed = false;
  int gpu = -1;
  uint64_t remaining = 0;  // counted events before the one that fails
  cudaError_t code = cudaSuccess;
};

struct Faults {
  std::mutex mutex;
  Trigger launch, allocation;
};

// "k[:code][@gpu]"; exits on a malformed value, since a test that meant to inject a fault and
// silently did not would pass for the wrong reason.
Trigger Parse(const char* name, const char* text, bool with_code) {
  Trigger t;
  const std::string s = text;
  try {
    size_t pos = 0;
    const unsigned long long k = std::stoull(s, &pos);
    t.code = cudaErrorIllegalAddress;
    if (with_code && pos < s.size() && s[pos] == ':') {
      size_t used = 0;
      t.code = cudaError_t(std::stoi(s.substr(pos + 1), &used));
      pos += 1 + used;
    }
    if (pos < s.size() && s[pos] == '@') {
      size_t used = 0;
      t.gpu = std::stoi(s.substr(pos + 1), &used);
      pos += 1 + used;
    }
    if (pos != s.size() || k == 0) throw std::invalid_argument(s);
    t.armed = true;
    t.remaining = k - 1;
  } catch (const std::exception&) {
    std::fprintf(stderr, "gpusim: %s='%s' is not k%s[@gpu] with k >= 1\n", name, text, with_code ? "[:code]" : "");
    std::exit(2);
  }
  return t;
}

Faults& State() {
  static Faults* faults = [] {
    auto* f = new Faults;
    if (const char* v = std::getenv("XMLT_SIM_FAULT_LAUNCH")) f->launch = Parse("XMLT_SIM_FAULT_LAUNCH", v, true);
    if (const char* v = std::getenv("XMLT_SIM_FAULT_ALLOC")) f->allocation = Parse("XMLT_SIM_FAULT_ALLOC", v, false);
    f->allocation.code = cudaErrorMemoryAllocation;
    return f;
  }();
  return *faults;
}

// Whether this event (on `gpu`) is the one the trigger waits for; disarms it then.
bool Count(Trigger& t, int gpu) {
  if (!t.armed || (t.gpu >= 0 && t.gpu != gpu)) return false;
  if (t.remaining > 0) {
    --t.remaining;
    return false;
  }
  t.armed = false;
  return true;
}

}  // namespace

void InjectStickyErrorAtLaunch(uint64_t k, cudaError_t code, int gpu) {
  if (k == 0) throw std::invalid_argument("InjectStickyErrorAtLaunch: k counts from 1");
  Faults& f = State();
  std::lock_guard<std::mutex> lock(f.mutex);
  f.launch = {true, gpu, k - 1, code};
}

void InjectOutOfMemoryAtAllocation(uint64_t k, int gpu) {
  if (k == 0) throw std::invalid_argument("InjectOutOfMemoryAtAllocation: k counts from 1");
  Faults& f = State();
  std::lock_guard<std::mutex> lock(f.mutex);
  f.allocation = {true, gpu, k - 1, cudaErrorMemoryAllocation};
}

void ClearInjectedFaults() {
  Faults& f = State();
  std::lock_guard<std::mutex> lock(f.mutex);
  f.launch.armed = f.allocation.armed = false;
}

namespace detail {

cudaError_t CountLaunch(int gpu) {
  Faults& f = State();
  std::lock_guard<std::mutex> lock(f.mutex);
  return Count(f.launch, gpu) ? f.launch.code : cudaSuccess;
}

bool CountAllocation(int gpu) {
  Faults& f = State();
  std::lock_guard<std::mutex> lock(f.mutex);
  return Count(f.allocation, gpu);
}

}  // namespace detail
}  // namespace gpusim
