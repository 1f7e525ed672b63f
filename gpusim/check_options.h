// How kernels are checked and scheduled on the simulated GPUs, read once from the environment:
//   XMLT_SIM_CHECKS=0     turns racecheck and initcheck off (they are on by default; the program
//                         says so on stderr at start when they are off; `off` is 0, `1` and `on`
//                         the default). synccheck always runs: it costs nothing, and without it a
//                         divergent barrier passes by chance.
//   XMLT_SIM_ORDER=SEED   each block's threads take their turns in an order drawn from SEED (an
//                         unsigned integer below 2^64) instead of the default order
//                         (block_scheduler.h). The same seed gives the same orders on every run;
//                         a failed launch names it so that it can be replayed.
// Any other value of either exits the program with code 2, naming it, before the first launch.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace gpusim {

// Whether racecheck and initcheck are compiled into this build: the device code is instrumented
// with the compiler's thread-sanitizer hooks (gpusim/access_hooks.cc), which cannot be combined
// with ASan's or TSan's own instrumentation. A sanitized build has synccheck only.
bool AccessChecksCompiled();
// Whether racecheck and initcheck run: compiled, and not turned off.
bool AccessChecksOn();
// For the simulator's tests: turns the access checks on or off until the next call.
void SetAccessChecks(bool on);

// The two variables' values (null: unset): whether the checks run, and the seed if one is given.
// Throw std::invalid_argument saying what the value is not.
bool ParseChecksSetting(const char* value);
std::optional<uint64_t> ParseTurnOrderSeed(const char* value);

// The seed of the turn orders, if XMLT_SIM_ORDER (or SetTurnOrderSeed) gave one.
std::optional<uint64_t> TurnOrderSeed();
// For the simulator's tests; nullopt restores the default order.
void SetTurnOrderSeed(std::optional<uint64_t> seed);
// "default turn order" or "turn order seed N (replay with XMLT_SIM_ORDER=N)", for messages.
std::string DescribeTurnOrder();

}  // namespace gpusim
