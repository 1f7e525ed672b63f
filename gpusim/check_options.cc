// The checks' and turn orders' settings; see check_options.h.
#include "gpusim/check_options.h"

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

namespace gpusim {
namespace {

bool ChecksOffInEnvironment() {
  const char* value = std::getenv("XMLT_SIM_CHECKS");
  return value != nullptr && (std::strcmp(value, "0") == 0 || std::strcmp(value, "off") == 0);
}

// Exits on a malformed seed: a run that meant to replay an order and silently took the default
// would prove nothing.
std::optional<uint64_t> SeedInEnvironment() {
  const char* value = std::getenv("XMLT_SIM_ORDER");
  if (value == nullptr || *value == '\0' || std::strcmp(value, "default") == 0) return std::nullopt;
  char* end = nullptr;
  const unsigned long long seed = std::strtoull(value, &end, 10);
  if (*end != '\0' || value[0] == '-') {
    std::fprintf(stderr, "gpusim: XMLT_SIM_ORDER=%s is neither an unsigned integer seed nor 'default'\n", value);
    std::exit(2);
  }
  return uint64_t(seed);
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
