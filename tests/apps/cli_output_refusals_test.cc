// The command line refuses files and outputs that cannot work before the work starts: FIFOs as
// files, outputs over inputs or in missing folders, a checkpoint folder or metrics file in use by
// another run, a --resume folder without a checkpoint.
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

// Issue: reliability, second round, row 1. A FIFO given as data, config or model is refused at
// once (exit 2), not waited on. Blocking here would hang the test: the fix is what keeps it short.
TEST(CliTest, AFifoAsDataConfigOrModelIsRefusedAtOnce) {
  Data d;
  const std::string fifo = d.dir.File("pipe");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"train", "--train", fifo, "--no-cache"}, {"info", fifo},
        {"--config", fifo, "info", d.train}, {"--config=" + fifo, "info", d.train},
        {"eval", "--model", fifo, "--test", d.test}}) {
    const CliResult r = Cli(args);
    EXPECT_EQ(r.code, 2) << Describe(r);
    EXPECT_NE(r.err.find("not a regular file"), std::string::npos) << Describe(r);
  }
}

// Issue: reliability, second round, row 4. An output that is an input (or another output) is
// refused with exit 2 before any work, and the input is left as it was.
TEST(CliTest, AnOutputThatIsAnInputIsRefusedAndTheInputKept) {
  Data d;
  const std::string train_text = xmlt::testing::ReadFile(d.train);
  const std::string model = d.dir.File("m.model");
  ASSERT_EQ(Cli({"train", "--train", d.train, "--epochs", "1", "--model", model}).code, 0);
  const std::string model_bytes = xmlt::testing::ReadFile(model);
  const std::string dot_train = d.dir.path() + "/./" + std::filesystem::path(d.train).filename().string();
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"train", "--train", d.train, "--epochs", "1", "--model", d.train},
        {"train", "--train", d.train, "--test", d.test, "--epochs", "1", "--model", d.test},
        {"train", "--train", d.train, "--epochs", "1", "--metrics", dot_train},
        {"train", "--train", d.train, "--epochs", "1", "--metrics", model, "--model", model},
        {"train", "--train", d.train, "--epochs", "1", "--model", d.train, "--checkpoint-dir", d.dir.File("ck")},
        {"predict", "--model", model, "--input", d.test, "--output", d.test},
        {"predict", "--model", model, "--input", d.test, "--output", model},
        {"convert", d.train, "-o", dot_train}}) {
    const CliResult r = Cli(args);
    EXPECT_EQ(r.code, 2) << Describe(r);
    EXPECT_TRUE(r.err.find("input") != std::string::npos || r.err.find("same file") != std::string::npos)
        << Describe(r);
  }
  EXPECT_EQ(xmlt::testing::ReadFile(d.train), train_text);
  EXPECT_EQ(xmlt::testing::ReadFile(model), model_bytes);
  EXPECT_FALSE(std::filesystem::exists(d.dir.File("ck"))) << "a refused run leaves no checkpoint folder behind";
}

// Issue: reliability, second round, row 3. Output locations are checked before any training.
TEST(CliTest, OutputLocationsAreCheckedBeforeTraining) {
  Data d;
  WriteFile(d.dir.File("a-file"), "x");
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"--model", "/nonexistent-folder/m.xmlt"}, "--model /nonexistent-folder/m.xmlt: the folder /nonexistent-folder does not exist"},
      {{"--model", d.dir.path()}, "is a folder, not a file"},
      {{"--checkpoint-dir", d.dir.File("a-file")}, "is a regular file, not a folder"},
      {{"--checkpoint-dir", d.dir.File("missing/deeper")}, "does not exist"},
  };
  for (const auto& [flags, message] : cases) {
    std::vector<std::string> args = {"train", "--train", d.train, "--epochs", "1"};
    args.insert(args.end(), flags.begin(), flags.end());
    const CliResult r = Cli(args);
    EXPECT_EQ(r.code, 2) << Describe(r);
    EXPECT_NE(r.err.find(message), std::string::npos) << message << "\n" << Describe(r);
    EXPECT_TRUE(r.out.empty()) << "trained before refusing: " << Describe(r);
  }
}

// Issue: reliability, second round, row 2: a checkpoint folder or metrics file in use by another
// run is refused before training (here the other run is this process, holding the same locks).
TEST(CliTest, ACheckpointFolderOrMetricsFileInUseIsRefused) {
  Data d;
  const std::string folder = d.dir.File("shared");
  {
    data::FolderLock other(folder);
    const CliResult r = Cli({"train", "--train", d.train, "--epochs", "1", "--checkpoint-dir", folder});
    EXPECT_EQ(r.code, 2) << Describe(r);
    EXPECT_NE(r.err.find("is in use by another run"), std::string::npos) << Describe(r);
  }
  EXPECT_EQ(Cli({"train", "--train", d.train, "--epochs", "1", "--checkpoint-dir", folder}).code, 0);
  const std::string metrics = d.dir.File("m.jsonl");
  run::MetricsLog other(metrics);
  const CliResult r = Cli({"train", "--train", d.train, "--epochs", "1", "--metrics", metrics});
  EXPECT_NE(r.code, 0) << Describe(r);
  EXPECT_NE(r.err.find("is being written by another run"), std::string::npos) << Describe(r);
}

// Issue: reliability, third round, row 1. A second run on the metrics file of a run that is
// training (here this process, which has started its log and written a line) is refused with exit
// 2 naming the file, and the first run's file is left whole.
TEST(CliTest, ASecondRunOnTheMetricsFileOfARunningOneIsRefusedAndTheFileStaysWhole) {
  Data d;
  const std::string metrics = d.dir.File("m.jsonl");
  run::EvalRecord record;
  record.megabatch = 7;
  run::MetricsLog running(metrics);
  running.Begin();
  running.Append(record);
  const CliResult r = Cli({"train", "--train", d.train, "--epochs", "1", "--metrics", metrics});
  EXPECT_EQ(r.code, 2) << Describe(r);
  EXPECT_NE(r.err.find("--metrics " + metrics + ".partial is being written by another run"), std::string::npos)
      << Describe(r);
  record.megabatch = 8;
  running.Append(record);
  running.Finish();
  const std::vector<std::string> lines = Lines(ReadFile(metrics));
  ASSERT_EQ(lines.size(), 2u) << ReadFile(metrics);
  EXPECT_EQ(json::parse(lines[0])["megabatch"], 7);
  EXPECT_EQ(json::parse(lines[1])["megabatch"], 8);
}

// Issue: reliability, third round, row 14: mistakes caught before the work, and flags that go
// together accepted.
TEST(CliTest, ResumeAndOutputMistakesAreCaughtBeforeTheWork) {
  Data d;
  // --resume of a folder without a checkpoint: refused before the data is read (the missing
  // training file is not what the message names), and the folder is not created.
  const std::string missing = d.dir.File("missing");
  CliResult r = Cli({"train", "--train", d.dir.File("no-such-train.txt"), "--resume", missing});
  EXPECT_EQ(r.code, 2) << Describe(r);
  EXPECT_NE(r.err.find("--resume " + missing + ": no checkpoint here"), std::string::npos) << Describe(r);
  EXPECT_FALSE(fs::exists(missing));
  // predict --output in a missing folder: refused before the model and the input are read.
  r = Cli({"predict", "--model", d.dir.File("no-such-model"), "--input", d.test, "--output", d.dir.File("nodir/p.txt")});
  EXPECT_EQ(r.code, 2) << Describe(r);
  EXPECT_NE(r.err.find("--output " + d.dir.File("nodir/p.txt") + ": the folder " + d.dir.File("nodir") + " does not exist"),
            std::string::npos)
      << Describe(r);
  // A resumed run checkpoints into its --resume folder, so --checkpoint-every needs no --checkpoint-dir.
  const std::string dir = d.dir.File("ckpt");
  ASSERT_EQ(Cli(TrainArgs(d, {"--epochs", "1", "--checkpoint-dir", dir})).code, 0);
  r = Cli(TrainArgs(d, {"--epochs", "2", "--resume", dir, "--checkpoint-every", "1"}));
  EXPECT_EQ(r.code, 0) << Describe(r);
}

}  // namespace
}  // namespace xmlt::apps
