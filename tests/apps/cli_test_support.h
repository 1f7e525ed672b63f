// What the command-line tests share (cli_test.cc, cli_predict_and_data_test.cc, cli_refusals_test.cc,
// cli_output_refusals_test.cc, cli_resume_test.cc): a learnable generated train/test pair, train
// arguments with small settings, and readings of a command's output.
#pragma once

#include <algorithm>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <random>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "tests/apps/cli_runner.h"
#include "tests/test_support.h"

namespace xmlt::apps::testing {

inline std::string Describe(const CliResult& r) {
  return "exit " + std::to_string(r.code) + "\n--- stdout:\n" + r.out + "\n--- stderr:\n" + r.err;
}

inline nlohmann::json LastJsonLine(const CliResult& r) {
  const std::vector<std::string> lines = Lines(r.out);
  if (lines.empty()) return nlohmann::json();
  return nlohmann::json::parse(lines.back(), nullptr, false);
}

inline constexpr int kFeatures = 40, kLabels = 6;

// XML-repository text of a learnable problem: a row of class c has features from block c
// (c*6 .. c*6+5) plus one noise feature, and labels {c} (sometimes with a second one). Every
// `unlabeled_every`-th row has no label.
inline std::string MakeText(int rows, uint64_t seed, int unlabeled_every = 0) {
  std::mt19937_64 rng(seed);
  std::ostringstream out;
  out << rows << " " << kFeatures << " " << kLabels << "\n";
  for (int r = 0; r < rows; ++r) {
    const int c = int(rng() % kLabels);
    const bool labeled = unlabeled_every == 0 || r % unlabeled_every != unlabeled_every - 1;
    if (labeled) {
      out << c;
      if (rng() % 4 == 0) {
        const int other = (c + 1 + int(rng() % (kLabels - 1))) % kLabels;
        out << "," << other;
      }
    }
    std::vector<int> ids = {c * 6 + int(rng() % 3), c * 6 + 3 + int(rng() % 3),
                            36 + int(rng() % 4)};
    for (int id : ids) out << " " << id << ":" << (1 + rng() % 3);
    out << "\n";
  }
  return out.str();
}

// A train/test pair in a temporary folder.
struct Data {
  xmlt::testing::TempDir dir;
  std::string train = dir.File("train.txt"), test = dir.File("test.txt");
  static constexpr int kTrainRows = 300, kTestRows = 100, kUnlabeledEvery = 10;
  Data() {
    xmlt::testing::WriteFile(train, MakeText(kTrainRows, 1, kUnlabeledEvery));
    xmlt::testing::WriteFile(test, MakeText(kTestRows, 2));
  }
  static constexpr int kLabeledTrainRows = kTrainRows - kTrainRows / kUnlabeledEvery;
};

// train on the pair with small settings; a flag in `extra` replaces the default given here (CLI11
// refuses a single-value option given twice).
inline std::vector<std::string> TrainArgs(const Data& d, std::vector<std::string> extra) {
  std::vector<std::string> args = {"train", "--train", d.train, "--test", d.test};
  const std::vector<std::pair<std::string, std::string>> defaults = {
      {"--hidden", "16"}, {"--batch", "32"}, {"--epochs", "2"}};
  for (const auto& [flag, value] : defaults) {
    if (std::find(extra.begin(), extra.end(), flag) != extra.end()) continue;
    args.push_back(flag);
    args.push_back(value);
  }
  args.insert(args.end(), extra.begin(), extra.end());
  return args;
}

}  // namespace xmlt::apps::testing
