// How kernels are checked and scheduled on the simulated GPUs, read once from the environment:
//   XMLT_SIM_CHECKS=0     turns racecheck and initcheck off (they are on by default; the program
//                         says so on stderr at start when they are off). synccheck always runs:
//                         it costs nothing, and without it a divergent barrier passes by chance.
//   XMLT_SIM_ORDER=SEED   each block's threads take their turns in an order drawn from SEED (an
//                         unsigned integer) instead of the default order (block_scheduler.h).
//                         The same seed gives the same orders on every run; a failed launch names
//                         it so that it can be replayed.
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

// The seed of the turn orders, if XMLT_SIM_ORDER (or SetTurnOrderSeed) gave one.
std::optional<uint64_t> TurnOrderSeed();
// For the simulator's tests; nullopt restores the default order.
void SetTurnOrderSeed(std::optional<uint64_t> seed);
// "default turn order" or "turn order seed N (replay with XMLT_SIM_ORDER=N)", for messages.
std::string DescribeTurnOrder();

}  // namespace gpusim
