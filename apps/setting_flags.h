// The scheduler names settings as its options do ("pert_threshold"); the command line speaks in
// flags (--pert-thr). This maps the one to the other, for a refused --resume and for settings no
// run can use.
#pragma once

#include <string>

#include "run/run_control.h"
#include "run/run_progress.h"
#include "scheduler/train_options.h"

namespace xmlt::apps {

// The flag that sets `setting`, or the setting's own name when no flag does.
std::string FlagOf(const std::string& setting);

// "FILE: this run's settings differ ...", one line per setting, each under its flag, with a hint
// where --algo set it.
std::string DescribeInFlags(const run::RunMismatch& mismatch);

// "--batch must be positive".
std::string DescribeInFlags(const scheduler::OptionError& error);

// What stopped the run, and how to go on: "--resume DIR with a lower --lr", "(no --checkpoint-dir:
// progress is lost)".
std::string DescribeInFlags(const run::RunStopped& stopped);

}  // namespace xmlt::apps
