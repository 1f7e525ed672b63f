// Host memory available to this process; see memory_limit.h.
#include "scheduler/memory_limit.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>
#include <stdexcept>

namespace xmlt::scheduler {
namespace {

namespace fs = std::filesystem;
constexpr uint64_t kNone = std::numeric_limits<uint64_t>::max();
// cgroup v1 writes "no limit" as the largest page-aligned signed value (9223372036854771712).
constexpr uint64_t kV1Unlimited = uint64_t{1} << 62;

// The file's first word as a number; `fallback` when missing or not a number ("max").
uint64_t ReadNumber(const fs::path& path, uint64_t fallback) {
  std::ifstream in(path);
  std::string word;
  if (!(in >> word)) return fallback;
  try {
    size_t used = 0;
    const uint64_t value = std::stoull(word, &used);
    return used == word.size() ? value : fallback;
  } catch (const std::exception&) {
    return fallback;
  }
}

// A "key value" line of a memory.stat; `fallback` when absent.
uint64_t ReadStat(const fs::path& path, const std::string& key, uint64_t fallback) {
  std::ifstream in(path);
  std::string name;
  uint64_t value = 0;
  while (in >> name >> value)
    if (name == key) return value;
  return fallback;
}

// The group's path in hierarchy `controller` ("" for v2's "0::PATH" line), from /proc/self/cgroup.
bool GroupPath(const std::string& root, const std::string& controller, std::string* path) {
  std::ifstream in(root + "/proc/self/cgroup");
  for (std::string line; std::getline(in, line);) {
    const size_t first = line.find(':'), second = line.find(':', first + 1);
    if (first == std::string::npos || second == std::string::npos) continue;
    const std::string controllers = line.substr(first + 1, second - first - 1);
    bool match = controller.empty() ? controllers.empty() && line.compare(0, first, "0") == 0 : false;
    std::stringstream list(controllers);
    for (std::string c; !controller.empty() && std::getline(list, c, ',');) match |= c == controller;
    if (match) {
      *path = line.substr(second + 1);
      return true;
    }
  }
  return false;
}

// The group's folder under `mount`; the mount itself when the group's path is not there (a
// container that mounts only its own group, without a cgroup namespace).
fs::path GroupFolder(const fs::path& mount, const std::string& path) {
  std::error_code error;
  const fs::path relative = fs::path(path).relative_path();
  if (relative.empty()) return mount;
  const fs::path folder = mount / relative;
  return fs::is_directory(folder, error) ? folder : mount;
}

uint64_t Headroom(uint64_t limit, uint64_t usage, uint64_t reclaimable) {
  const uint64_t working_set = usage - std::min(usage, reclaimable);
  return limit > working_set ? limit - working_set : 1;
}

// v2: every group from this one up to the mount limits it; the tightest headroom holds.
uint64_t HeadroomV2(const std::string& root) {
  std::string path;
  const fs::path mount = root + "/sys/fs/cgroup";
  std::error_code error;
  if (!GroupPath(root, "", &path) || !fs::exists(mount / "cgroup.controllers", error)) return kNone;
  uint64_t headroom = kNone;
  for (fs::path folder = GroupFolder(mount, path);; folder = folder.parent_path()) {
    const uint64_t limit = ReadNumber(folder / "memory.max", kNone);
    if (limit != kNone) {
      headroom = std::min(headroom, Headroom(limit, ReadNumber(folder / "memory.current", 0),
                                             ReadStat(folder / "memory.stat", "inactive_file", 0)));
    }
    if (folder == mount || !folder.has_relative_path()) break;
  }
  return headroom;
}

// v1: the memory controller's limit over the hierarchy (memory.stat says it whole).
uint64_t HeadroomV1(const std::string& root) {
  std::string path;
  if (!GroupPath(root, "memory", &path)) return kNone;
  const fs::path folder = GroupFolder(root + "/sys/fs/cgroup/memory", path);
  uint64_t limit = ReadStat(folder / "memory.stat", "hierarchical_memory_limit", kNone);
  if (limit == kNone) limit = ReadNumber(folder / "memory.limit_in_bytes", kNone);
  if (limit == kNone || limit >= kV1Unlimited) return kNone;
  return Headroom(limit, ReadNumber(folder / "memory.usage_in_bytes", 0),
                  ReadStat(folder / "memory.stat", "total_inactive_file", 0));
}

uint64_t MemAvailable(const std::string& root) {
  std::ifstream meminfo(root + "/proc/meminfo");
  std::string key, unit;
  uint64_t value = 0;
  while (meminfo >> key >> value >> unit)
    if (key == "MemAvailable:") return value * 1024;
  return 0;
}

}  // namespace

uint64_t CgroupMemoryHeadroom(const std::string& root) { return std::min(HeadroomV2(root), HeadroomV1(root)); }

uint64_t MemoryLimitFromEnvironment() {
  const char* text = std::getenv("XMLT_MEMORY_LIMIT");
  if (text == nullptr) return kNone;
  const std::string value = text;
  const auto refuse = [&] {
    return std::invalid_argument("XMLT_MEMORY_LIMIT must be a number of bytes above 0, with K, M, G or T for KiB, "
                                 "MiB, GiB or TiB (\"2G\"), not '" + value + "'");
  };
  size_t digits = 0;
  while (digits < value.size() && std::isdigit(static_cast<unsigned char>(value[digits]))) ++digits;
  if (digits == 0 || digits > 19 || value.size() - digits > 1) throw refuse();
  int shift = 0;
  if (digits < value.size()) {
    const std::string units = "KMGT";
    const size_t unit = units.find(char(std::toupper(static_cast<unsigned char>(value[digits]))));
    if (unit == std::string::npos) throw refuse();
    shift = 10 * int(unit + 1);
  }
  const uint64_t number = std::stoull(value.substr(0, digits));
  if (number == 0 || number > (kNone >> shift)) throw refuse();
  return number << shift;
}

uint64_t AvailableMemory(const std::string& root) {
  const uint64_t machine = MemAvailable(root), group = CgroupMemoryHeadroom(root);
  const uint64_t known = std::min(machine == 0 ? kNone : machine, group);
  const uint64_t available = std::min(known, MemoryLimitFromEnvironment());
  return available == kNone ? 0 : available;
}

}  // namespace xmlt::scheduler
