// `xmltrain train`: loads the data, trains the model, logs metrics, saves the model; the run
// itself is train_run.h's.
#include <CLI/CLI.hpp>
#include <memory>

#include "apps/cli.h"
#include "apps/train_flags.h"
#include "apps/train_presets.h"
#include "apps/train_run.h"

namespace xmlt::apps {

Command AddTrainCommand(CLI::App* app) {
  auto flags = std::make_shared<TrainFlags>();
  TrainFlags& f = *flags;
  CLI::App* cmd = app->add_subcommand("train", "Train a model on a training file, evaluating on a test file");
  AddTrainFlags(cmd, &f);
  cmd->footer(PresetTable());
  f.command = cmd;
  return {cmd, [flags] {
            TrainSession session;
            return RunTrain(*flags, session);
          }};
}

}  // namespace xmlt::apps
