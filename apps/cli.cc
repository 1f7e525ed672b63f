// Command-line dispatch and the mapping of errors to exit codes; see cli.h.
#include "apps/cli.h"
#include "apps/setting_flags.h"
#include "apps/stdout_check.h"
#include "apps/config_check.h"
#include "apps/config_reader.h"

#include <CLI/CLI.hpp>
#include <tbb/global_control.h>

#include <iostream>
#include <memory>
#include <sstream>
#include <stdexcept>

#include "data/input_error.h"

namespace xmlt::apps {

int RunCli(int argc, char** argv) {
  CLI::App app{"xmltrain: sparse deep models for extreme multi-label classification"};
  app.require_subcommand(1);
  app.fallthrough();  // global options may also follow the subcommand
  app.set_config("--config", "", "Read options from a TOML/INI file");
  app.config_formatter(std::make_shared<ConfigReader>());
  int threads = 0;
  app.add_option("--threads", threads, "Worker threads (0 = all cores)")->capture_default_str();
  const std::vector<Command> commands = {AddTrainCommand(&app),   AddEvalCommand(&app),
                                        AddPredictCommand(&app), AddGenCommand(&app),
                                        AddConvertCommand(&app), AddInfoCommand(&app)};
  try {
    for (int i = 1; i < argc; ++i) {  // --config PATH or --config=PATH, checked before CLI11 reads it
      const std::string arg = argv[i];
      if (arg == "--config" && i + 1 < argc) CheckConfigFile(argv[i + 1], app);
      if (arg.rfind("--config=", 0) == 0) CheckConfigFile(arg.substr(9), app);
    }
  } catch (const data::InputError& e) {
    std::cerr << "error: " << e.what() << "\n";
    return kExitBadInput;
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // --help's text is the command's output, written and checked as any other (a full disk, a
    // closed pipe): through WriteStdout, which keeps the cause of a failed write.
    std::ostringstream help;
    const int code = app.exit(e, help, std::cerr);
    WriteStdout(help.str());
    if (code != 0) return kExitBadInput;
    const std::string error = StdoutError();
    if (!error.empty()) {
      std::cerr << "error: " << error << "\n";
      return kExitFailure;
    }
    return kExitOk;
  }
  try {
    std::unique_ptr<tbb::global_control> limit;
    if (threads < 0) throw std::invalid_argument("--threads must be >= 0");
    if (threads > 0)
      limit = std::make_unique<tbb::global_control>(tbb::global_control::max_allowed_parallelism, threads);
    for (const Command& command : commands)
      if (command.app->parsed()) return command.run();
    return kExitOk;
  } catch (const run::RunMismatch& e) {
    std::cerr << "error: " << DescribeInFlags(e) << "\n";
    return kExitBadInput;
  } catch (const scheduler::OptionError& e) {
    std::cerr << "error: " << DescribeInFlags(e) << "\n";
    return kExitBadInput;
  } catch (const data::InputError& e) {
    std::cerr << "error: " << e.what() << "\n";
    return kExitBadInput;
  } catch (const std::invalid_argument& e) {
    std::cerr << "error: " << e.what() << "\n";
    return kExitBadInput;
  } catch (const run::RunStopped& e) {
    std::cerr << "error: " << DescribeInFlags(e) << "\n";
    return kExitFailure;
  } catch (const std::exception& e) {
    std::cerr << "error: " << e.what() << "\n";
    return kExitFailure;
  }
}

}  // namespace xmlt::apps
