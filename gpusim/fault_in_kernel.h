// How an access check (access_checks.cc) stops the simulated thread that failed it. The scheduler
// defines it (block_scheduler.cc); a file of its own, since the scheduler includes the checks.
#pragma once

#include <string>

namespace gpusim::detail {

// Fails the running block with `what` and stops the calling simulated thread for good, without
// unwinding it (it is called from within an instrumented load or store).
[[noreturn]] void FaultInKernel(const std::string& what);

}  // namespace gpusim::detail
