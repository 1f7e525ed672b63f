// The data a command reads; see command_input.h.
#include "apps/command_input.h"

#include <CLI/CLI.hpp>
#include <cstdint>
#include <iostream>
#include <stdexcept>
#include <string>
#include <utility>

#include "data/feature_limit.h"
#include "data/row_normalization.h"

namespace xmlt::apps {

void Warnings::operator()(const std::string& text) const {
  if (collected_ != nullptr) collected_->push_back(text);
  if (print_) std::cerr << "warning: " << text << "\n";
}

data::LoadOptions DataFlags::ToLoadOptions() const {
  data::LoadOptions options;
  options.one_based = one_based;
  options.use_cache = !no_cache;
  if (format == "auto") {
    options.format = data::TextFormat::kAuto;
  } else if (format == "xml") {
    options.format = data::TextFormat::kXmlRepo;
  } else if (format == "libsvm") {
    options.format = data::TextFormat::kLibsvm;
  } else {
    throw std::invalid_argument("--format must be auto, xml or libsvm, not '" + format + "'");
  }
  return options;
}

void AddDataFlags(CLI::App* command, DataFlags* flags) {
  command->add_flag("--one-based", flags->one_based, "Feature and label ids in the files start at 1");
  command->add_flag("--no-cache", flags->no_cache, "Ignore FILE.xmlb binary caches");
  command->add_option("--format", flags->format,
                      "Text format: auto (a first line 'N D L' is an XML-repository header), xml, libsvm")
      ->capture_default_str();
}

data::Dataset LoadWithWarnings(const std::string& path, const std::string& labels_path,
                               const DataFlags& flags, Warnings warnings) {
  data::Dataset dataset = data::LoadDataset(path, flags.ToLoadOptions(), labels_path);
  for (const std::string& warning : dataset.warnings) warnings(warning);
  return dataset;
}

void WarnUnlabelledEvaluationRows(const data::Dataset& dataset, const std::string& path, Warnings warnings) {
  uint64_t unlabelled = 0;
  for (uint64_t r = 0; r < dataset.num_rows(); ++r) unlabelled += dataset.labels.RowSize(r) == 0;
  if (unlabelled > 0)
    warnings(std::to_string(unlabelled) + " of the " + std::to_string(dataset.num_rows()) + " rows of " + path +
             " have no label: they count as misses in P@k and nDCG@k, as in the XML repository's metrics");
}

data::Dataset AsModelInput(const data::Dataset& rows, const kernels::ModelShape& shape, const std::string& path,
                           Warnings warnings) {
  data::FeatureLimit limited = data::LimitFeatures(rows, shape.num_features);
  if (limited.dropped > 0)
    warnings(path + " has " + std::to_string(limited.dropped) + " feature entries (in " +
             std::to_string(limited.rows_touched) + " rows) with ids beyond the model's " +
             std::to_string(shape.num_features) + " inputs: they are ignored, in the rows' L2 norms too");
  // Labels the model has no output for count as misses; say so, since the scores are then not
  // those of the data the model was trained for.
  if (rows.num_labels() > shape.num_labels)
    warnings(path + " has " + std::to_string(rows.num_labels()) + " labels, the model " +
             std::to_string(shape.num_labels) + ": labels " + std::to_string(shape.num_labels) +
             " and above are never predicted and count as misses");
  return shape.normalize_rows ? data::NormalizeRowsL2(limited.dataset) : std::move(limited.dataset);
}

}  // namespace xmlt::apps
