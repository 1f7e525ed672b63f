// Parser of the --devices list ("cpu:4", "cuda:0,cuda:1", "cuda:0x4", "cuda:0,cpu:2") into one
// DeviceSpec per worker; errors quote the offending item so the user can find it in a long list.
#include "engine/device_spec.h"

#include <cstddef>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

namespace xmlt::engine {
namespace {

constexpr char kSpace[] = " \t\r\n";

std::string Trim(const std::string& s) {
  const size_t first = s.find_first_not_of(kSpace);
  if (first == std::string::npos) return "";
  const size_t last = s.find_last_not_of(kSpace);
  return s.substr(first, last - first + 1);
}

[[noreturn]] void Fail(const std::string& item, const std::string& why) {
  throw std::invalid_argument("--devices: bad item \"" + item + "\": " + why);
}

// A decimal number of plain digits in [lo, hi]; signs, spaces and overflow are errors.
int ParseNumber(const std::string& item, const std::string& digits, const char* what, int lo,
                int hi) {
  if (digits.empty()) Fail(item, std::string("missing ") + what);
  for (char c : digits) {
    if (c < '0' || c > '9') Fail(item, std::string(what) + " \"" + digits + "\" is not a number");
  }
  long value = 0;
  for (char c : digits) {
    value = value * 10 + (c - '0');
    if (value > hi) break;  // stops before overflow; reported below
  }
  if (value < lo || value > hi) {
    Fail(item, std::string(what) + " " + digits + " is out of range " + std::to_string(lo) + ".." +
                   std::to_string(hi));
  }
  return static_cast<int>(value);
}

}  // namespace

std::vector<DeviceSpec> ParseDeviceList(const std::string& text) {
  if (Trim(text).empty()) {
    throw std::invalid_argument("--devices: empty device list (e.g. cpu:4 or cuda:0,cuda:1)");
  }
  std::vector<DeviceSpec> devices;
  int cpu_count = 0;             // CPU workers so far, to suggest cpu:N
  std::map<int, int> gpu_count;  // GPU index -> logical devices so far, to suggest cuda:GxK
  size_t start = 0;
  while (true) {
    const size_t comma = text.find(',', start);
    const std::string raw =
        text.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    const std::string item = Trim(raw);
    if (item.empty()) {
      throw std::invalid_argument("--devices: empty item in \"" + text +
                                  "\" (stray or doubled comma)");
    }
    const size_t colon = item.find(':');
    const std::string kind = item.substr(0, colon);
    const std::string rest = colon == std::string::npos ? "" : item.substr(colon + 1);
    if (kind == "cpu") {
      const int count =
          colon == std::string::npos ? 1 : ParseNumber(item, rest, "CPU count", 1, kMaxDeviceCount);
      if (cpu_count > 0) {
        Fail(item, "\"cpu\" named twice; write cpu:" + std::to_string(cpu_count + count) + " for " +
                       std::to_string(cpu_count + count) + " CPU workers");
      }
      for (int i = 0; i < count; ++i) {
        DeviceSpec d;
        d.kind = DeviceKind::kCpu;
        d.ordinal = i;
        d.id = "cpu:" + std::to_string(i);
        devices.push_back(d);
      }
      cpu_count = count;
    } else if (kind == "cuda") {
      if (colon == std::string::npos) Fail(item, "name the GPU, e.g. cuda:0");
      const size_t x = rest.find('x');
      const int gpu = ParseNumber(item, rest.substr(0, x), "GPU index", 0, kMaxDeviceCount - 1);
      const int count =
          x == std::string::npos
              ? 1
              : ParseNumber(item, rest.substr(x + 1), "logical device count", 1, kMaxDeviceCount);
      const auto seen = gpu_count.find(gpu);
      if (seen != gpu_count.end()) {
        const std::string total = std::to_string(seen->second + count);
        Fail(item, "GPU " + std::to_string(gpu) +
                       " named twice; write cuda:" + std::to_string(gpu) + "x" + total + " for " +
                       total + " logical devices on it");
      }
      gpu_count[gpu] = count;
      for (int i = 0; i < count; ++i) {
        DeviceSpec d;
        d.kind = DeviceKind::kCuda;
        d.ordinal = gpu;
        d.logical = i;
        // Logical devices get a suffix so ids stay unique; a lone device keeps the plain name.
        d.id = "cuda:" + std::to_string(gpu) + (count > 1 ? "." + std::to_string(i) : "");
        devices.push_back(d);
      }
    } else {
      Fail(item, "unknown device kind \"" + kind + "\" (known: cpu, cuda)");
    }
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return devices;
}

std::vector<DeviceSpec> DevicesOfRanks(const std::vector<DeviceSpec>& local, int ranks, std::vector<int>* owner) {
  owner->clear();
  if (ranks <= 1) {
    owner->assign(local.size(), 0);
    return local;
  }
  std::vector<DeviceSpec> all;
  for (int rank = 0; rank < ranks; ++rank) {
    for (DeviceSpec spec : local) {
      spec.id += "@r" + std::to_string(rank);
      all.push_back(spec);
      owner->push_back(rank);
    }
  }
  return all;
}

bool SharesContext(const DeviceSpec& a, int rank_a, const DeviceSpec& b, int rank_b) {
  return a.kind == DeviceKind::kCuda && b.kind == DeviceKind::kCuda && a.ordinal == b.ordinal && rank_a == rank_b;
}

std::string DeviceListText(const std::vector<DeviceSpec>& devices) {
  std::string text;
  for (const DeviceSpec& d : devices) text += (text.empty() ? "" : ",") + d.id;
  return text;
}

}  // namespace xmlt::engine
