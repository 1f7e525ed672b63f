// The train command's options through the command line: --lr auto, unlabelled evaluation rows,
// several devices, --eval-rows, and --config files.
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

// --lr auto end to end: the search's report on stderr and in the summary, the pick one grid step
// below the held-out winner, a tenth of the training rows held out, and the run trained at the
// picked rate (the metrics' per-device learning rate).
TEST(CliTest, LrAutoPicksAGridStepBelowTheHeldOutWinnerAndTrainsWithIt) {
  Data d;
  const std::string metrics = d.dir.File("m.jsonl");
  const CliResult r = Cli(TrainArgs(d, {"--lr", "auto", "--epochs", "20", "--metrics", metrics}));
  ASSERT_EQ(r.code, 0) << Describe(r);
  EXPECT_NE(r.err.find("--lr auto: picked "), std::string::npos) << r.err;
  const json search = LastJsonLine(r)["lr_search"];
  ASSERT_TRUE(search.is_object()) << r.out;
  EXPECT_EQ(search["heldout_rows"].get<uint64_t>(), uint64_t(Data::kTrainRows / 10));
  EXPECT_EQ(search["search_rows"].get<uint64_t>(), uint64_t(Data::kTrainRows - Data::kTrainRows / 10));
  const std::vector<double> grid = {0.005, 0.01, 0.05, 0.1, 0.5, 1, 5};
  ASSERT_EQ(search["candidates"].size(), grid.size());
  size_t winner = grid.size();
  for (size_t i = 0; i < grid.size(); ++i) {
    const json& c = search["candidates"][i];
    EXPECT_EQ(c["lr"].get<double>(), grid[i]);
    if (c["lr"].get<double>() == search["winner"].get<double>()) winner = i;
  }
  ASSERT_LT(winner, grid.size()) << search.dump();
  EXPECT_EQ(search["picked"].get<double>(), grid[winner == 0 ? 0 : winner - 1]) << search.dump();
  const std::vector<std::string> lines = Lines(ReadFile(metrics));
  ASSERT_FALSE(lines.empty());
  EXPECT_FLOAT_EQ(json::parse(lines.back())["devices"][0]["lr"].get<float>(), float(search["picked"].get<double>()));
  EXPECT_GT(LastJsonLine(r)["p1"].get<double>(), 0.5) << "the picked rate learnt little";
}

// Issue: reliability, third round, row 14. When the smallest candidate rate wins the search,
// there is no rate one step below it: the message said "one step below the best" all the same.
TEST(CliTest, LrAutoSaysWhenTheSmallestCandidateWon) {
  xmlt::testing::TempDir dir;
  ASSERT_EQ(Cli({"gen", "--rows", "300", "--test-rows", "100", "--features", "40", "--labels", "6", "--out", dir.path()}).code, 0);
  // Raw values 3,000 times larger, not normalized: every rate above the smallest diverges.
  const std::string text = ReadFile(dir.File("train.txt"));
  std::string scaled;
  for (size_t k = 0; k < text.size(); ++k) {
    scaled += text[k];
    if (text[k] != ':') continue;
    size_t end = k + 1;
    while (end < text.size() && !std::isspace(static_cast<unsigned char>(text[end]))) ++end;
    std::ostringstream value;
    value << std::stod(text.substr(k + 1, end - k - 1)) * 3000;
    scaled += value.str();
    k = end - 1;
  }
  const std::string train = dir.File("scaled.txt");
  WriteFile(train, scaled);
  // Plain SGD on the first layer too (Adagrad's steps do not grow with the values), and no dropout.
  const CliResult r = Cli({"train", "--train", train, "--normalize", "none", "--lr", "auto", "--epochs", "1", "--hidden",
                           "8", "--input-optimizer", "sgd", "--dropout", "0"});
  ASSERT_EQ(r.code, 0) << Describe(r);
  ASSERT_NE(r.err.find(":0.500 0.01:diverged"), std::string::npos) << "the smallest rate did not win alone:\n" << r.err;
  EXPECT_NE(r.err.find("--lr auto: picked 0.005, the short runs' best and the smallest candidate"), std::string::npos)
      << Describe(r);
  EXPECT_EQ(r.err.find("one step below"), std::string::npos) << Describe(r);
}

// Rows without a label in an evaluated set count as misses, the XML repository's convention; a
// user is told how many there are (here two blank lines the header counts as rows), in eval and in
// train's --test.
TEST(CliTest, UnlabelledRowsOfAnEvaluatedSetAreCountedAndSaid) {
  Data d;
  const std::string model = d.dir.File("m.xmlt"), padded = d.dir.File("padded.txt");
  std::string text = MakeText(Data::kTestRows, 2);
  text.replace(0, text.find(' '), std::to_string(Data::kTestRows + 2));
  WriteFile(padded, text + "\n\n");
  const CliResult trained = Cli({"train", "--train", d.train, "--test", padded, "--hidden", "16", "--epochs", "2",
                                 "--model", model});
  ASSERT_EQ(trained.code, 0) << Describe(trained);
  const std::string said = "2 of the " + std::to_string(Data::kTestRows + 2) + " rows of " + padded + " have no label";
  EXPECT_NE(trained.err.find(said), std::string::npos) << trained.err;
  const CliResult eval = Cli({"eval", "--model", model, "--test", padded});
  ASSERT_EQ(eval.code, 0) << Describe(eval);
  EXPECT_NE(eval.err.find(said), std::string::npos) << eval.err;
  EXPECT_EQ(LastJsonLine(eval)["rows"].get<uint64_t>(), uint64_t(Data::kTestRows + 2));
  // A set where every row has a label says nothing of the kind.
  EXPECT_EQ(Cli({"eval", "--model", model, "--test", d.test}).err.find("have no label"), std::string::npos);
}

TEST(CliTest, MultiDeviceFlagsAreCheckedAsUsageErrors) {
  Data d;
  // One GPU past those this machine has, with or without a GPU and a CUDA build.
  const std::string absent_gpu = "cuda:" + std::to_string(engine::CudaDeviceCount());
  const std::vector<std::vector<std::string>> bad = {
      {"--algo", "bogus"},
      {"--algo", "single", "--devices", "cpu:2"},
      {"--algo", "adaptive", "--devices", absent_gpu},
      {"--algo", "adaptive", "--devices", "cpu:0"},
      {"--algo", "adaptive", "--clock", "sometimes"},
      {"--algo", "adaptive", "--devices", "cpu:2", "--speed", "1,x"},
      {"--algo", "adaptive", "--devices", "cpu:2", "--speed", "1,1.1,1.2"},
      {"--algo", "adaptive", "--hetero", "cvb:vmach=-1"},
      {"--algo", "adaptive", "--momentum", "1"},
      {"--algo", "adaptive", "--pert-delta", "nan"},
      {"--algo", "elastic", "--row-cost", "-1"},
  };
  for (const std::vector<std::string>& flags : bad) {
    const CliResult r = Cli(TrainArgs(d, flags));
    std::string joined;
    for (const std::string& f : flags) joined += f + " ";
    EXPECT_EQ(r.code, 2) << joined << "\n" << Describe(r);
    EXPECT_NE(r.err.find("error: "), std::string::npos) << joined;
  }
}

TEST(CliTest, AdaptiveRunReportsEveryDevice) {
  Data d;
  const std::string metrics = d.dir.File("adaptive.jsonl");
  const CliResult r = Cli(TrainArgs(d, {"--algo", "adaptive", "--devices", "cpu:3", "--speed", "1,1.5,2",
                                        "--mega-batch", "2", "--eval-every", "1", "--metrics", metrics}));
  ASSERT_EQ(r.code, 0) << Describe(r);
  const json summary = LastJsonLine(r);
  EXPECT_EQ(summary["train_samples"].get<int>(), 2 * Data::kLabeledTrainRows);
  uint64_t rows = 0;
  for (const std::string& line : Lines(ReadFile(metrics))) {
    const json record = json::parse(line);
    ASSERT_EQ(record["devices"].size(), 3u) << line;
    EXPECT_EQ(record["devices"][2]["id"], "cpu:2");
    for (const json& device : record["devices"]) rows += device["rows"].get<uint64_t>();
  }
  EXPECT_EQ(rows, uint64_t(2 * Data::kLabeledTrainRows));
}

TEST(CliTest, EvalRowsSamplesTheTestSetAndTheLastEvaluationIsWhole) {
  Data d;
  for (const std::string algo : {"single", "adaptive"}) {
    const std::string metrics = d.dir.File(algo + "-eval-rows.jsonl");
    std::vector<std::string> flags = {"--algo", algo, "--mega-batch", "2", "--eval-every", "1",
                                      "--eval-rows", "7", "--metrics", metrics};
    if (algo != "single") flags.insert(flags.end(), {"--devices", "cpu:2"});
    const CliResult r = Cli(TrainArgs(d, flags));
    ASSERT_EQ(r.code, 0) << Describe(r);
    const std::vector<std::string> lines = Lines(ReadFile(metrics));
    ASSERT_GE(lines.size(), 2u) << algo;
    for (size_t k = 0; k + 1 < lines.size(); ++k) EXPECT_EQ(json::parse(lines[k])["test_rows"], 7) << algo;
    EXPECT_GT(json::parse(lines.back())["test_rows"].get<int>(), 7) << algo;
  }
  // Issue: reliability, third round, row 10. mlp_best_p1 compares like with like: the evaluations on
  // the rows of the last one (here the whole test set, which only the last covers), not a small
  // sample's lucky 1.0 against the whole set's score.
  const std::string metrics = d.dir.File("tiny-sample.jsonl");
  const CliResult tiny = Cli(TrainArgs(d, {"--mega-batch", "1", "--eval-every", "1", "--eval-rows", "3", "--epochs",
                                           "4", "--metrics", metrics, "--ranker", "off"}));
  ASSERT_EQ(tiny.code, 0) << Describe(tiny);
  const std::vector<std::string> lines = Lines(ReadFile(metrics));
  double best_sampled = 0;
  for (size_t k = 0; k + 1 < lines.size(); ++k) best_sampled = std::max(best_sampled, json::parse(lines[k])["p1"].get<double>());
  const json summary = LastJsonLine(tiny);
  ASSERT_GT(best_sampled, summary["p1"].get<double>()) << "no sample scored above the whole set: nothing to check";
  EXPECT_EQ(summary["mlp_best_p1"].get<double>(), summary["p1"].get<double>()) << summary.dump();
  EXPECT_EQ(summary["mlp_best_epoch"].get<double>(), summary["epochs"].get<double>()) << summary.dump();
  const CliResult bad = Cli(TrainArgs(d, {"--eval-rows", "7", "--final-eval", "sometimes"}));
  EXPECT_EQ(bad.code, 2) << Describe(bad);
  EXPECT_NE(bad.err.find("--final-eval"), std::string::npos) << bad.err;
}

TEST(CliTest, ConfigFileSetsSubcommandOptions) {
  Data d;
  const std::string ini = d.dir.File("run.ini");
  // CLI11 2.1 maps a [train] section onto the train subcommand's options.
  WriteFile(ini, "[train]\nepochs = 3\nhidden = 8\nbatch = 50\n");
  const std::string model = d.dir.File("m.model");
  const CliResult r =
      Cli({"--config", ini, "train", "--train", d.train, "--test", d.test, "--model", model});
  ASSERT_EQ(r.code, 0) << Describe(r);
  const json summary = LastJsonLine(r);
  EXPECT_EQ(summary["train_samples"].get<uint64_t>(), uint64_t(3 * Data::kLabeledTrainRows));
  EXPECT_EQ(summary["epochs"].get<double>(), 3.0);
  EXPECT_EQ(summary["batches"].get<uint64_t>(), 3u * 6u);  // ceil(270 / 50) per epoch
  EXPECT_EQ(engine::LoadModel(model).mlp.shape.hidden, std::vector<uint32_t>{8});

  // The command line wins over the file; --config may follow the subcommand.
  const CliResult over =
      Cli({"train", "--train", d.train, "--test", d.test, "--epochs", "1", "--config", ini});
  ASSERT_EQ(over.code, 0) << Describe(over);
  EXPECT_EQ(LastJsonLine(over)["train_samples"].get<uint64_t>(), uint64_t(Data::kLabeledTrainRows));

  // The same in TOML.
  const std::string toml = d.dir.File("run.toml");
  WriteFile(toml, "threads = 1\n[train]\nepochs = 2\nnormalize = \"none\"\n");
  const CliResult t =
      Cli({"--config", toml, "train", "--train", d.train, "--hidden", "8", "--model", model});
  ASSERT_EQ(t.code, 0) << Describe(t);
  EXPECT_EQ(LastJsonLine(t)["train_samples"].get<uint64_t>(),
            uint64_t(2 * Data::kLabeledTrainRows));
  EXPECT_FALSE(engine::LoadModel(model).mlp.shape.normalize_rows);

  // A bad value in the file is a usage error too.
  WriteFile(ini, "[train]\nepochs = many\n");
  const CliResult bad = Cli({"--config", ini, "train", "--train", d.train});
  EXPECT_EQ(bad.code, 2) << Describe(bad);

  const CliResult missing =
      Cli({"--config", d.dir.File("absent.ini"), "train", "--train", d.train});
  EXPECT_EQ(missing.code, 2) << Describe(missing);
}

}  // namespace
}  // namespace xmlt::apps
