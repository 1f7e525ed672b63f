// The xmltrain command line: subcommands train, eval, predict, gen, convert and info.
// Exit codes: 0 success, 2 bad usage or bad input, 1 anything else.
#pragma once

#include <CLI/CLI.hpp>
#include <functional>
#include <string>
#include <vector>

#include "data/dataset_loader.h"
#include "kernels/model.h"

namespace xmlt::apps {

constexpr int kExitOk = 0;
constexpr int kExitFailure = 1;
constexpr int kExitBadInput = 2;

// Runs the command line; never throws.
int RunCli(int argc, char** argv);

// Options every command that reads data understands.
struct DataFlags {
  bool one_based = false;
  bool no_cache = false;
  std::string format = "auto";
  data::LoadOptions ToLoadOptions() const;
};
void AddDataFlags(CLI::App* command, DataFlags* flags);

// Loads a dataset (features file plus optional separate labels file) and prints its warnings
// (unless told not to: the ranks of a run after the first, which read the same files).
data::Dataset LoadWithWarnings(const std::string& path, const std::string& labels_path,
                               const DataFlags& flags, bool print_warnings = true);

// For a set that is evaluated: the rows without a label count as misses in P@k and nDCG@k (the XML
// repository's convention), which a user should know when there are any. Printed when
// `print_warnings`.
void WarnUnlabelledEvaluationRows(const data::Dataset& dataset, const std::string& path, bool print_warnings = true);

// Rows to be scored by (or trained beside) a model of `shape`: feature ids beyond its input size
// left out, before the rows' L2 norms too, then the model's row normalization, as in training.
// Warns, unless told not to, of the feature entries left out and of labels beyond the model's,
// which it never predicts (they count as misses).
data::Dataset AsModelInput(const data::Dataset& rows, const kernels::ModelShape& shape, const std::string& path,
                           bool print_warnings = true);

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
