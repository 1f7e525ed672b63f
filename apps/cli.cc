// Command-line dispatch and the mapping of errors to exit codes; see cli.h.
#include "apps/cli.h"
#include "apps/setting_flags.h"
#include "apps/config_check.h"
#include "apps/config_reader.h"


#include <tbb/global_control.h>

#include <iostream>
#include <memory>
#include <stdexcept>

#include "data/feature_limit.h"
#include "data/input_error.h"
#include "data/row_normalization.h"

namespace xmlt::apps {

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
                               const DataFlags& flags, bool print_warnings) {
  data::Dataset dataset = data::LoadDataset(path, flags.ToLoadOptions(), labels_path);
  if (print_warnings)
    for (const std::string& warning : dataset.warnings) std::cerr << "warning: " << warning << "\n";
  return dataset;
}

void WarnUnlabelledEvaluationRows(const data::Dataset& dataset, const std::string& path, bool print_warnings) {
  uint64_t unlabelled = 0;
  for (uint64_t r = 0; r < dataset.num_rows(); ++r) unlabelled += dataset.labels.RowSize(r) == 0;
  if (unlabelled > 0 && print_warnings)
    std::cerr << "warning: " << unlabelled << " of the " << dataset.num_rows() << " rows of " << path
              << " have no label: they count as misses in P@k and nDCG@k, as in the XML repository's metrics\n";
}

data::Dataset AsModelInput(const data::Dataset& rows, const kernels::ModelShape& shape, const std::string& path,
                           bool print_warnings) {
  data::FeatureLimit limited = data::LimitFeatures(rows, shape.num_features);
  if (limited.dropped > 0 && print_warnings)
    std::cerr << "warning: " << path << " has " << limited.dropped << " feature entries (in " << limited.rows_touched
              << " rows) with ids beyond the model's " << shape.num_features
              << " inputs: they are ignored, in the rows' L2 norms too\n";
  // Labels the model has no output for count as misses; say so, since the scores are then not
  // those of the data the model was trained for.
  if (rows.num_labels() > shape.num_labels && print_warnings)
    std::cerr << "warning: " << path << " has " << rows.num_labels() << " labels, the model " << shape.num_labels
              << ": labels " << shape.num_labels << " and above are never predicted and count as misses\n";
  return shape.normalize_rows ? data::NormalizeRowsL2(limited.dataset) : std::move(limited.dataset);
}

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
    const int code = app.exit(e);
    return code == 0 ? kExitOk : kExitBadInput;
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
