// Tests of predict and the data commands through RunCli: predict's top-k lines, written
// atomically; gen's files as info describes them; info of a hand-written file; convert's cache,
// which train then uses.
#include "apps/cli.h"
#include "tests/apps/cli_runner.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "data/folder_lock.h"
#include "engine/device_query.h"
#include "engine/model_file.h"
#include "kernels/cpu/cpu_isa.h"
#include "run/metrics_log.h"
#include "tests/apps/cli_test_support.h"
#include "tests/test_support.h"

namespace xmlt::apps {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using xmlt::testing::ReadFile;
using xmlt::testing::TempDir;
using xmlt::testing::WriteFile;

using namespace testing;  // the shared pieces of cli_test_support.h and cli_runner.h

// Parses a predict line: k "label:prob" pairs, labels in range, probabilities in (0, 1] and
// non-increasing.
void CheckPredictLine(const std::string& line, size_t k) {
  std::istringstream in(line);
  std::vector<std::string> tokens;
  for (std::string t; in >> t;) tokens.push_back(t);
  ASSERT_EQ(tokens.size(), k) << line;
  double previous = 2;
  std::vector<int> labels;
  for (const std::string& t : tokens) {
    const size_t colon = t.find(':');
    ASSERT_NE(colon, std::string::npos) << t;
    const int label = std::stoi(t.substr(0, colon));
    const double prob = std::stod(t.substr(colon + 1));
    EXPECT_GE(label, 0);
    EXPECT_LT(label, kLabels);
    EXPECT_GT(prob, 0.0) << t;
    EXPECT_LE(prob, 1.0) << t;
    EXPECT_LE(prob, previous) << line;
    previous = prob;
    labels.push_back(label);
  }
  std::sort(labels.begin(), labels.end());
  EXPECT_EQ(std::unique(labels.begin(), labels.end()), labels.end()) << "repeated label: " << line;
}

TEST(CliTest, PredictWritesTopKPairsPerRowAtomically) {
  Data d;
  const std::string model = d.dir.File("m.model");
  ASSERT_EQ(Cli(TrainArgs(d, {"--model", model})).code, 0);
  const std::string output = d.dir.File("pred.txt");
  WriteFile(output, "old content\n");
  const CliResult r =
      Cli({"predict", "--model", model, "--input", d.test, "--top-k", "3", "--output", output});
  ASSERT_EQ(r.code, 0) << Describe(r);
  EXPECT_EQ(r.out.find(':'), std::string::npos) << "predictions went to stdout: " << r.out;
  const std::vector<std::string> lines = Lines(ReadFile(output));
  ASSERT_EQ(lines.size(), size_t(Data::kTestRows));
  for (const std::string& line : lines) CheckPredictLine(line, 3);
  // No temporary file is left beside the output.
  std::vector<std::string> names;
  for (const auto& entry : fs::directory_iterator(d.dir.path()))
    names.push_back(entry.path().filename());
  std::sort(names.begin(), names.end());
  EXPECT_EQ(names, (std::vector<std::string>{"m.model", "pred.txt", "test.txt", "train.txt"}));

  // A failing predict leaves the previous output untouched.
  const std::string before = ReadFile(output);
  const CliResult bad =
      Cli({"predict", "--model", model, "--input", d.dir.File("absent.txt"), "--output", output});
  EXPECT_EQ(bad.code, 2) << Describe(bad);
  EXPECT_EQ(ReadFile(output), before);

  // k above the number of labels is capped at L; without --output the lines go to stdout.
  const CliResult all = Cli({"predict", "--model", model, "--input", d.test, "--top-k", "50"});
  ASSERT_EQ(all.code, 0) << Describe(all);
  const std::vector<std::string> stdout_lines = Lines(all.out);
  ASSERT_EQ(stdout_lines.size(), size_t(Data::kTestRows));
  for (const std::string& line : stdout_lines) CheckPredictLine(line, kLabels);

  const CliResult zero = Cli({"predict", "--model", model, "--input", d.test, "--top-k", "0"});
  EXPECT_EQ(zero.code, 2) << Describe(zero);
}

TEST(CliTest, GenWritesTrainAndTestFilesThatInfoDescribes) {
  TempDir dir;
  const std::string out = dir.File("gen");
  const CliResult r =
      Cli({"gen", "--rows", "200", "--test-rows", "50", "--features", "100", "--labels", "10",
           "--nnz", "5", "--labels-per-row", "2", "--seed", "3", "--out", out});
  ASSERT_EQ(r.code, 0) << Describe(r);
  ASSERT_TRUE(fs::exists(out + "/train.txt"));
  ASSERT_TRUE(fs::exists(out + "/test.txt"));
  EXPECT_EQ(Lines(ReadFile(out + "/train.txt")).size(), 201u);  // header + rows
  EXPECT_EQ(Lines(ReadFile(out + "/test.txt")).size(), 51u);

  const CliResult info = Cli({"info", out + "/train.txt"});
  ASSERT_EQ(info.code, 0) << Describe(info);
  EXPECT_NE(info.out.find("rows                    200\n"), std::string::npos) << info.out;
  EXPECT_NE(info.out.find("features (D)            100\n"), std::string::npos) << info.out;
  EXPECT_NE(info.out.find("labels (L)              10 "), std::string::npos) << info.out;

  // Same seed, same files.
  const std::string again = dir.File("again");
  ASSERT_EQ(Cli({"gen", "--rows", "200", "--test-rows", "50", "--features", "100", "--labels", "10",
                 "--nnz", "5", "--labels-per-row", "2", "--seed", "3", "--out", again})
                .code,
            0);
  EXPECT_EQ(ReadFile(out + "/train.txt"), ReadFile(again + "/train.txt"));
}

TEST(CliTest, InfoPrintsSizesOfAHandWrittenFile) {
  Data d;
  const CliResult r = Cli({"info", d.train});
  ASSERT_EQ(r.code, 0) << Describe(r);
  EXPECT_NE(r.out.find("rows                    300\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("features (D)            40\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("labels (L)              6 "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("rows without labels     30\n"), std::string::npos) << r.out;
}

TEST(CliTest, ConvertWritesACacheThatTrainUses) {
  Data d;
  const CliResult convert = Cli({"convert", d.train});
  ASSERT_EQ(convert.code, 0) << Describe(convert);
  const std::string cache = d.train + ".xmlb";
  ASSERT_TRUE(fs::exists(cache)) << convert.out;

  // The unchanged text is read through its cache.
  const CliResult info_text = Cli({"info", d.train});
  EXPECT_EQ(info_text.code, 0) << Describe(info_text);
  EXPECT_NE(info_text.out.find("source                  " + cache + "\n"), std::string::npos)
      << info_text.out;
  const CliResult info = Cli({"info", cache});
  EXPECT_EQ(info.code, 0) << Describe(info);
  EXPECT_NE(info.out.find("rows                    300\n"), std::string::npos) << info.out;

  // Row 5 of the second reliability round: the text replaced by one with fewer rows and a time
  // older than the cache's (`cp -p`, `rsync -t`). Training reads the new text, and says why.
  WriteFile(d.train, MakeText(Data::kTrainRows / 2, 1, Data::kUnlabeledEvery));
  fs::last_write_time(d.train, fs::last_write_time(cache) - std::chrono::hours(1));
  const CliResult replaced = Cli(TrainArgs(d, {}));
  ASSERT_EQ(replaced.code, 0) << Describe(replaced);
  constexpr int kHalfRows = Data::kTrainRows / 2;
  EXPECT_EQ(LastJsonLine(replaced)["train_samples"].get<uint64_t>(),
            uint64_t(2 * (kHalfRows - kHalfRows / Data::kUnlabeledEvery)));
  EXPECT_NE(replaced.err.find("warning: " + cache + " was made from another version of " + d.train),
            std::string::npos)
      << replaced.err;

  // Spoilt, the text is an error with or without the stale cache beside it.
  WriteFile(d.train, "this is not a dataset\n");
  fs::last_write_time(d.train, fs::last_write_time(cache) - std::chrono::hours(1));
  EXPECT_EQ(Cli(TrainArgs(d, {})).code, 2);

  // --no-cache reads the (spoilt) text.
  const CliResult uncached = Cli(TrainArgs(d, {"--no-cache"}));
  EXPECT_EQ(uncached.code, 2) << Describe(uncached);

  // An explicit -o, given directly to train.
  WriteFile(d.train, MakeText(Data::kTrainRows, 1, Data::kUnlabeledEvery));
  const std::string other = d.dir.File("other.xmlb");
  ASSERT_EQ(Cli({"convert", d.train, "-o", other}).code, 0);
  const CliResult direct =
      Cli({"train", "--train", other, "--test", d.test, "--hidden", "16", "--epochs", "1"});
  ASSERT_EQ(direct.code, 0) << Describe(direct);
  EXPECT_EQ(LastJsonLine(direct)["train_samples"].get<uint64_t>(),
            uint64_t(Data::kLabeledTrainRows));
}

}  // namespace
}  // namespace xmlt::apps
