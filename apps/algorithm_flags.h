// Flags read by one part of an algorithm only (Algorithm 1's batch scaling, the normalized merge's
// perturbation, the elastic force): refused when the run's dispatch and merge would ignore them, so
// that `--algo elastic --beta 8` does not train the same model as `--beta 16` and say nothing.
#pragma once

#include "apps/train_flags.h"
#include "scheduler/train_options.h"

namespace xmlt::apps {

// For a multi-device --algo, with the `scheduling` ApplyAlgorithm decided: std::invalid_argument naming
// the first flag given that the run's schedule and merge (from --algo, or --schedule and --merge) never
// read.
void RefuseFlagsTheAlgorithmIgnores(const TrainFlags& f, const scheduler::SchedulerOptions& scheduling);

}  // namespace xmlt::apps
