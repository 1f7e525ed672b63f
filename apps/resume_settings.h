// A refused --resume in the words of the command line: the scheduler names the settings that
// differ as its fingerprint stores them ("pert_threshold"), and this maps them to their flags.
#pragma once

#include <string>

#include "scheduler/run_progress.h"

namespace xmlt::apps {

// "FILE: this run's settings differ ...", one line per setting, each under its flag, with a hint
// where --algo set it.
std::string DescribeInFlags(const scheduler::RunMismatch& mismatch);

}  // namespace xmlt::apps
