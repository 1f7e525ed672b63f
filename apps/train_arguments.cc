// Parsing train's flags from a list of arguments; see train_arguments.h.
#include "apps/train_arguments.h"

#include <algorithm>

namespace xmlt::apps {

TrainArguments::TrainArguments(const std::vector<std::string>& args) : app_("xmltrain") {
  // As RunCli declares them: --threads is the program's, the rest the train command's.
  app_.fallthrough();
  app_.add_option("--threads", threads_, "Worker threads (0 = all cores)");
  CLI::App* command = app_.add_subcommand("train");
  AddTrainFlags(command, &flags_);
  flags_.command = command;
  std::vector<std::string> reversed = {"train"};  // CLI11 takes the arguments last first
  reversed.insert(reversed.end(), args.begin(), args.end());
  std::reverse(reversed.begin(), reversed.end());
  app_.parse(reversed);
  if (threads_ < 0) throw std::invalid_argument("--threads must be >= 0");
}

}  // namespace xmlt::apps
