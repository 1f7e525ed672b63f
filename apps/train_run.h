// One `xmltrain train` run, from its parsed flags to the trained model. The command line runs it
// on files and prints what it finds; the Python package runs the same code with its data handed in
// from memory, and takes the records, the summary and the model back instead.
#pragma once

#include "apps/train_flags.h"
#include "apps/train_session.h"

namespace xmlt::apps {

// Runs `xmltrain train` with `f` (parsed by AddTrainFlags's options), planned once (train_plan.h);
// returns the exit code the command line ends with. Throws what the command line turns into
// "error: ..." (cli.h).
int RunTrain(const TrainFlags& f, TrainSession& session);

}  // namespace xmlt::apps
