// The set of simulated GPUs; see devices.h.
#include "gpusim/devices.h"

#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

namespace gpusim {
namespace {

struct DeviceSet {
  std::vector<std::unique_ptr<SimDevice>> devices;
};

DeviceSet& Devices();

// "gpusim: contexts opened: GPU 0, GPU 1" (or "none"), for tests that check which GPUs a run
// touched.
void ReportContexts() {
  std::string opened;
  for (const auto& d : Devices().devices)
    if (d->context_opened) opened += (opened.empty() ? "GPU " : ", GPU ") + std::to_string(d->ordinal);
  std::fprintf(stderr, "gpusim: contexts opened: %s\n", opened.empty() ? "none" : opened.c_str());
}

DeviceSet& Devices() {
  static DeviceSet* set = [] {
    auto* s = new DeviceSet;
    int count = 2;
    if (const char* v = std::getenv("XMLT_SIM_GPUS")) {
      char* end = nullptr;
      const long n = std::strtol(v, &end, 10);
      if (end == v || *end != '\0' || n < 0 || n > 64) {
        std::fprintf(stderr, "gpusim: XMLT_SIM_GPUS='%s' is not a GPU count from 0 to 64\n", v);
        std::exit(2);
      }
      count = int(n);
    }
    uint64_t memory = uint64_t(16) << 30;
    if (const char* v = std::getenv("XMLT_SIM_GPU_MEMORY")) {
      if (!ParseByteSize(v, &memory) || memory == 0) {
        std::fprintf(stderr, "gpusim: XMLT_SIM_GPU_MEMORY='%s' is not a size in bytes such as 16G or 512M\n", v);
        std::exit(2);
      }
    }
    if (const char* v = std::getenv("XMLT_SIM_REPORT_CONTEXTS"); v != nullptr && std::string(v) == "1")
      std::atexit(ReportContexts);
    for (int i = 0; i < count; ++i) {
      auto d = std::make_unique<SimDevice>();
      d->ordinal = i;
      d->total_bytes = memory;
      s->devices.push_back(std::move(d));
    }
    return s;
  }();
  return *set;
}

}  // namespace

bool ParseByteSize(const std::string& text, uint64_t* bytes) {
  size_t pos = 0;
  while (pos < text.size() && std::isdigit(static_cast<unsigned char>(text[pos]))) ++pos;
  if (pos == 0 || pos > 19) return false;
  const uint64_t value = std::stoull(text.substr(0, pos));
  const std::string suffix = text.substr(pos);
  int shift = 0;
  if (suffix == "B") {
    shift = 0;
  } else if (!suffix.empty()) {
    const std::string units = "KMGT";
    const size_t unit = units.find(char(std::toupper(static_cast<unsigned char>(suffix[0]))));
    const std::string rest = suffix.substr(1);
    if (unit == std::string::npos || !(rest.empty() || rest == "B" || rest == "iB")) return false;
    shift = 10 * int(unit + 1);
  }
  if (shift > 0 && value > (UINT64_MAX >> shift)) return false;
  *bytes = value << shift;
  return true;
}

int DeviceCount() { return int(Devices().devices.size()); }

SimDevice* DeviceAt(int ordinal) {
  DeviceSet& s = Devices();
  return ordinal >= 0 && ordinal < int(s.devices.size()) ? s.devices[size_t(ordinal)].get() : nullptr;
}

namespace detail {

int& CurrentOrdinal() {
  static thread_local int current = 0;
  return current;
}

namespace {
cudaError_t& LastError() {
  static thread_local cudaError_t last = cudaSuccess;
  return last;
}
}  // namespace

void SetLastError(cudaError_t error) {
  if (error != cudaSuccess) LastError() = error;
}

cudaError_t TakeLastError() {
  // The thread's record is reset either way, as the runtime resets it; a sticky error stays with
  // its GPU (every call there returns it) and does not follow the thread to the others.
  const cudaError_t last = LastError();
  LastError() = cudaSuccess;
  const cudaError_t sticky = StickyError(CurrentOrdinal());
  return sticky != cudaSuccess ? sticky : last;  // sticky errors are never cleared
}

void ClearLastError() { LastError() = cudaSuccess; }

cudaError_t PeekLastError() {
  const cudaError_t sticky = StickyError(CurrentOrdinal());
  return sticky != cudaSuccess ? sticky : LastError();
}

cudaError_t StickyError(int ordinal) {
  SimDevice* d = DeviceAt(ordinal);
  return d == nullptr ? cudaSuccess : cudaError_t(d->sticky.load());
}

cudaError_t ContextError(int ordinal) {
  SimDevice* d = DeviceAt(ordinal);
  if (d == nullptr) return cudaSuccess;
  d->context_opened = true;
  return cudaError_t(d->sticky.load());
}

void LoseContext(int ordinal, cudaError_t code, const std::string& why) {
  SimDevice* d = DeviceAt(ordinal);
  if (d == nullptr) return;
  int expected = cudaSuccess;
  if (d->sticky.compare_exchange_strong(expected, code)) {
    d->lost_why = why;
    d->lost_why_ready = true;
    std::fprintf(stderr, "gpusim: GPU %d: %s; its context is lost (error %d)\n", ordinal, why.c_str(), int(code));
  }
}

std::string ContextLossReason(int ordinal) {
  SimDevice* d = DeviceAt(ordinal);
  return d != nullptr && d->lost_why_ready.load() ? d->lost_why : std::string();
}

void ResetContext(int ordinal) {
  if (SimDevice* d = DeviceAt(ordinal)) {
    d->lost_why_ready = false;
    d->lost_why.clear();
    d->sticky = cudaSuccess;
  }
}

}  // namespace detail
}  // namespace gpusim
