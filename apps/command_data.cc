// `xmltrain gen`, `convert` and `info`: making, caching and inspecting datasets.
#include <CLI/CLI.hpp>
#include <filesystem>
#include <iostream>
#include <memory>
#include <sstream>

#include "apps/cli.h"
#include "apps/command_input.h"
#include "apps/output_paths.h"
#include "apps/stdout_check.h"
#include "apps/unsigned_flag.h"
#include "data/binary_cache.h"
#include "data/dataset_stats.h"
#include "data/input_error.h"
#include "data/source_stamp.h"
#include "data/synthetic_generator.h"
#include "data/text_writer.h"
#include "scheduler/memory_limit.h"

namespace xmlt::apps {
namespace {

struct GenFlags {
  std::string preset, out = ".";
  double scale = 1.0;
  data::GeneratorConfig config;
};

// The generated rows are held in memory (CSR: 8 bytes a feature entry, 4 a label, 16 a row) before
// they are written; asked for more than the machine has, gen stops now, not when it runs out.
void CheckGeneratedDataFits(const data::GeneratorConfig& config) {
  const long double rows = (long double)config.train_rows + (long double)config.test_rows;
  const long double bytes = rows * (8.0L * config.nnz_per_row + 4.0L * config.labels_per_row + 16.0L);
  const uint64_t available = scheduler::AvailableMemory();
  if (bytes > (long double)available) {
    std::ostringstream text;
    text << "gen: " << uint64_t(rows) << " rows of " << config.nnz_per_row << " features and " << config.labels_per_row
         << " labels take about " << uint64_t(bytes / (1 << 20)) << " MiB in memory, and " << (available >> 20)
         << " MiB are available: generate fewer rows (--rows, --test-rows, --scale) or fewer entries (--nnz)";
    throw std::invalid_argument(text.str());
  }
}

// The sizes as given, before anything is made: a value gen would ignore, or make nothing of, is
// refused naming its flag.
void CheckGenFlags(CLI::App* cmd, const GenFlags& f) {
  if (!(f.scale > 0) || f.scale > 1)
    throw std::invalid_argument("--scale must be in (0, 1], not " + cmd->get_option("--scale")->as<std::string>());
  if (f.preset.empty() && cmd->count("--scale"))
    throw std::invalid_argument("--scale shrinks a --preset: give --preset, or the sizes themselves (--rows ...)");
  const uint64_t most_rows = data::kMaxGeneratedRows;
  for (const auto& [flag, rows] : {std::pair<const char*, uint64_t>{"--rows", f.config.train_rows},
                                   std::pair<const char*, uint64_t>{"--test-rows", f.config.test_rows}}) {
    if (!cmd->count(flag)) continue;
    if (rows == 0 || rows > most_rows)
      throw std::invalid_argument(std::string(flag) + " must be 1 to " + std::to_string(most_rows) + ", not " +
                                  std::to_string(rows));
  }
}

void RunGen(CLI::App* cmd, GenFlags& f) {
  CheckGenFlags(cmd, f);
  ProbeOutputDir("--out", f.out, /*creates_parents=*/true);
  data::GeneratorConfig config = f.config;
  if (!f.preset.empty()) {
    config = data::PresetConfig(f.preset, f.scale);
    config.seed = f.config.seed;
    // Explicit sizes override the preset's.
    if (cmd->count("--rows")) config.train_rows = f.config.train_rows;
    if (cmd->count("--test-rows")) config.test_rows = f.config.test_rows;
  }
  CheckGeneratedDataFits(config);
  std::filesystem::create_directories(f.out);
  const data::GeneratedData generated = data::Generate(config);
  const std::string train_path = f.out + "/train.txt", test_path = f.out + "/test.txt";
  data::WriteXmlRepoText(generated.train, train_path);
  data::WriteXmlRepoText(generated.test, test_path);
  WriteStdout("wrote " + train_path + " (" + std::to_string(generated.train.num_rows()) + " rows) and " + test_path +
              " (" + std::to_string(generated.test.num_rows()) + " rows): " + std::to_string(config.features) +
              " features, " + std::to_string(config.labels) + " labels\n");
  CheckStdoutWritten();
}

struct ConvertFlags {
  std::string input, labels, output;
  DataFlags data;
};

void RunConvert(ConvertFlags& f) {
  f.data.no_cache = true;  // always convert from the text itself
  const std::string output = f.output.empty() ? data::CachePathFor(f.input) : f.output;
  ProbeOutputFile("--output", output);
  RefuseOutputsOverInputs({{"INPUT", f.input}, {"--labels", f.labels}}, {AtomicOutput("--output", output)});
  // The stamp taken before the parse goes into the cache; a text that changes while it is parsed
  // is refused, so a cache never claims a version of the text it was not made from.
  const bool has_source = f.labels.empty() && !data::IsBinaryCache(f.input);
  const data::SourceStamp before = has_source ? data::StampSource(f.input) : data::SourceStamp{};
  const data::Dataset dataset = LoadWithWarnings(f.input, f.labels, f.data);
  if (has_source && data::StampSource(f.input) != before) {
    throw data::InputError(f.input, 0, "changed while it was read; convert it again");
  }
  data::WriteBinaryCache(dataset, output, f.data.one_based, before);
  WriteStdout("wrote " + output + " (" + std::to_string(dataset.num_rows()) + " rows, " +
              std::to_string(dataset.features.nnz()) + " feature entries)\n");
  CheckStdoutWritten();
}

struct InfoFlags {
  std::string input, labels;
  DataFlags data;
};

void RunInfo(const InfoFlags& f) {
  const data::Dataset dataset = data::LoadDataset(f.input, f.data.ToLoadOptions(), f.labels);
  WriteStdout(data::FormatStats(data::ComputeStats(dataset), dataset));
  CheckStdoutWritten();
}

}  // namespace

Command AddGenCommand(CLI::App* app) {
  auto flags = std::make_shared<GenFlags>();
  GenFlags& f = *flags;
  CLI::App* cmd = app->add_subcommand("gen", "Generate a synthetic dataset (train.txt and test.txt)");
  cmd->add_option("--preset", f.preset, "amazon670k or delicious200k (shapes of Table 1 of the Adaptive SGD paper)");
  cmd->add_option("--scale", f.scale, "Shrink a preset's rows, features and labels by this factor")->capture_default_str();
  cmd->add_option("--rows", f.config.train_rows, "Training rows")->capture_default_str()->check(kUnsignedValue);
  cmd->add_option("--test-rows", f.config.test_rows, "Test rows")->capture_default_str()->check(kUnsignedValue);
  cmd->add_option("--features", f.config.features, "Features (D)")->capture_default_str()->check(kUnsignedValue);
  cmd->add_option("--labels", f.config.labels, "Labels (L)")->capture_default_str()->check(kUnsignedValue);
  cmd->add_option("--nnz", f.config.nnz_per_row, "Mean non-zero features per row")->capture_default_str();
  cmd->add_option("--labels-per-row", f.config.labels_per_row, "Mean labels per row")->capture_default_str();
  cmd->add_option("--seed", f.config.seed, "Random seed")->capture_default_str()->check(kUnsignedValue);
  cmd->add_option("--out", f.out, "Output directory")->capture_default_str();
  return {cmd, [cmd, flags] { RunGen(cmd, *flags); return kExitOk; }};
}

Command AddConvertCommand(CLI::App* app) {
  auto flags = std::make_shared<ConvertFlags>();
  CLI::App* cmd = app->add_subcommand("convert", "Write the .xmlb binary cache of a text dataset");
  cmd->add_option("input", flags->input, "Text dataset")->required();
  cmd->add_option("--labels", flags->labels, "Labels file when the input is the X file of a split pair");
  cmd->add_option("-o,--output", flags->output, "Cache file (default: INPUT.xmlb, used automatically)");
  AddDataFlags(cmd, &flags->data);
  return {cmd, [flags] { RunConvert(*flags); return kExitOk; }};
}

Command AddInfoCommand(CLI::App* app) {
  auto flags = std::make_shared<InfoFlags>();
  CLI::App* cmd = app->add_subcommand("info", "Print a dataset's sizes, distributions and warnings");
  cmd->add_option("input", flags->input, "Dataset (text or .xmlb)")->required();
  cmd->add_option("--labels", flags->labels, "Labels file when the input is the X file of a split pair");
  AddDataFlags(cmd, &flags->data);
  return {cmd, [flags] { RunInfo(*flags); return kExitOk; }};
}

}  // namespace xmlt::apps
