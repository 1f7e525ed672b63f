// The data a command reads: the flags every such command has, loading with warnings, and rows made
// into a model's input.
#pragma once

#include "apps/cli_app.h"
#include <string>

#include "data/dataset_loader.h"
#include "kernels/model.h"

namespace xmlt::apps {

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

}  // namespace xmlt::apps
