// The xmltrain command line: subcommands train, eval, predict, gen, convert and info.
// Exit codes: 0 success, 2 bad usage or bad input, 1 anything else.
#pragma once

#include "apps/cli_app.h"
#include <functional>
#include <string>
#include <vector>

namespace xmlt::apps {

constexpr int kExitOk = 0;
constexpr int kExitFailure = 1;
constexpr int kExitBadInput = 2;

// The most labels predict writes per row (--top-k; the Python package's k): a bound on its output,
// 1000 times the rows.
constexpr unsigned kMaxTopK = 1000;

// Runs the command line; never throws.
int RunCli(int argc, char** argv);

// Each subcommand registers its options and the function that runs it after parsing; the
// function captures the option storage, which lives as long as it does, and returns the exit code.
struct Command {
  CLI::App* app = nullptr;
  std::function<int()> run;
};
Command AddTrainCommand(CLI::App* app);
Command AddEvalCommand(CLI::App* app);
Command AddPredictCommand(CLI::App* app);
Command AddGenCommand(CLI::App* app);
Command AddConvertCommand(CLI::App* app);
Command AddInfoCommand(CLI::App* app);

}  // namespace xmlt::apps
