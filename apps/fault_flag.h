// --inject-fault device=I,megabatch=K[,kind=fail|nan|exit|lost], for tests and drills (the injection
// itself: scheduler/run_control.h).
#pragma once

#include <string>

#include "run/run_control.h"

namespace xmlt::apps {

// Parses the flag's value; throws std::invalid_argument naming the flag.
scheduler::FaultInjection ParseFaultInjection(const std::string& text);

}  // namespace xmlt::apps
