// The data a command reads: the flags every such command has, loading with warnings, and rows made
// into a model's input.
#pragma once

#include "apps/cli_app.h"
#include <string>
#include <vector>

#include "data/dataset_loader.h"
#include "kernels/model.h"

namespace xmlt::apps {

// Where a command's warnings go: printed on stderr as "warning: ..." (the command line), collected
// for the caller (the Python package raises them as Python warnings), or dropped (the ranks of a
// run after the first, which read the same files). A bool says printed or dropped.
class Warnings {
 public:
  Warnings(bool print) : print_(print) {}  // NOLINT: implicit, for the callers that print or not
  static Warnings Into(std::vector<std::string>* collected) {
    Warnings w(false);
    w.collected_ = collected;
    return w;
  }
  void operator()(const std::string& text) const;

 private:
  bool print_;
  std::vector<std::string>* collected_ = nullptr;
};

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
                               const DataFlags& flags, Warnings warnings = true);

// For a set that is evaluated: the rows without a label count as misses in P@k and nDCG@k (the XML
// repository's convention), which a user should know when there are any.
void WarnUnlabelledEvaluationRows(const data::Dataset& dataset, const std::string& path, Warnings warnings = true);

// Rows to be scored by (or trained beside) a model of `shape`: feature ids beyond its input size
// left out, before the rows' L2 norms too, then the model's row normalization, as in training.
// Warns of the feature entries left out and of labels beyond the model's, which it never predicts
// (they count as misses).
data::Dataset AsModelInput(const data::Dataset& rows, const kernels::ModelShape& shape, const std::string& path,
                           Warnings warnings = true);

}  // namespace xmlt::apps
