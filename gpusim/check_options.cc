// The checks' and turn orders' settings; see check_options.h.
#include "gpusim/check_options.h"

#include <atomic>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>

namespace gpusim {
namespace {

// Exits on a value that is not one of the settings: a run that meant to turn the checks off, or to
// replay an order, and silently took the default would prove nothing.
[[noreturn]] void RefuseSetting(const char* variable, const std::string& problem) {
  std::fprintf(stderr, "gpusim: %s=%s\n", variable, problem.c_str());
  std::exit(2);
}

bool ChecksOffInEnvironment() {
  try {
    return !ParseChecksSetting(std::getenv("XMLT_SIM_CHECKS"));
  } catch (const std::invalid_argument& e) {
    RefuseSetting("XMLT_SIM_CHECKS", e.what());
  }
}

std::optional<uint64_t> SeedInEnvironment() {
  try {
    return ParseTurnOrderSeed(std::getenv("XMLT_SIM_ORDER"));
  } catch (const std::invalid_argument& e) {
    RefuseSetting("XMLT_SIM_ORDER", e.what());
  }
}

struct Settings {
  std::atomic<bool> checks{AccessChecksCompiled() && !ChecksOffInEnvironment()};
  std::atomic<bool> seeded{false};
  std::atomic<uint64_t> seed{0};
  Settings() {
    if (const std::optional<uint64_t> s = SeedInEnvironment()) {
      seed = *s;
      seeded = true;
    }
  }
};

Settings& State() {
  static Settings settings;
  return settings;
}

// At start, not at the first launch: a long run that turned the checks off says so before it
// starts, and one process never prints it twice.
const bool announced = [] {
  if (AccessChecksCompiled() && ChecksOffInEnvironment())
    std::fprintf(stderr, "gpusim: racecheck and initcheck are off (XMLT_SIM_CHECKS=0); synccheck stays on\n");
  State();
  return true;
}();

}  // namespace

bool ParseChecksSetting(const char* value) {
  if (value == nullptr || *value == '\0' || std::strcmp(value, "1") == 0 || std::strcmp(value, "on") == 0)
    return true;
  if (std::strcmp(value, "0") == 0 || std::strcmp(value, "off") == 0) return false;
  throw std::invalid_argument(std::string(value) + " is neither 0 or off (checks off) nor 1 or on (checks on)");
}

std::optional<uint64_t> ParseTurnOrderSeed(const char* value) {
  if (value == nullptr || *value == '\0' || std::strcmp(value, "default") == 0) return std::nullopt;
  char* end = nullptr;
  errno = 0;
  const unsigned long long seed = std::strtoull(value, &end, 10);
  if (*end != '\0' || value[0] == '-' || !std::isdigit(static_cast<unsigned char>(value[0])))
    throw std::invalid_argument(std::string(value) + " is neither an unsigned integer seed nor 'default'");
  if (errno == ERANGE)
    throw std::invalid_argument(std::string(value) + " is beyond 18446744073709551615, the largest seed");
  return uint64_t(seed);
}

bool AccessChecksCompiled() {
#if defined(XMLT_GPUSIM_ACCESS_CHECKS)
  return true;
#else
  return false;
#endif
}

bool AccessChecksOn() { return State().checks.load(std::memory_order_relaxed); }

void SetAccessChecks(bool on) { State().checks = on && AccessChecksCompiled(); }

std::optional<uint64_t> TurnOrderSeed() {
  Settings& s = State();
  if (!s.seeded.load(std::memory_order_relaxed)) return std::nullopt;
  return s.seed.load(std::memory_order_relaxed);
}

void SetTurnOrderSeed(std::optional<uint64_t> seed) {
  Settings& s = State();
  s.seed = seed.value_or(0);
  s.seeded = seed.has_value();
}

std::string DescribeTurnOrder() {
  const std::optional<uint64_t> seed = TurnOrderSeed();
  if (!seed) return "default turn order";
  const std::string n = std::to_string(*seed);
  return "turn order seed " + n + " (replay with XMLT_SIM_ORDER=" + n + ")";
}

}  // namespace gpusim
