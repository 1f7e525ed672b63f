// Issue: reliability, third round, row 3. Every command checks that its output was written: a
// stdout on a full disk (here /dev/full) is an error naming stdout and the cause, exit 1, never a
// short output with exit 0. Runs the real binary, whose stdout these tests replace.
#include <gtest/gtest.h>

#include <filesystem>

#include "run/checkpoint_file.h"
#include "tests/apps/child_process.h"
#include "tests/apps/cli_runner.h"
#include "tests/test_support.h"

namespace xmlt::apps {
namespace {

using testing::Cli;
using testing::CliResult;
using xmlt::testing::ReadFile;
using xmlt::testing::TempDir;

// A generated pair and a model trained on it.
struct Trained {
  TempDir dir;
  std::string train = dir.File("train.txt"), test = dir.File("test.txt"), model = dir.File("model.xmlt");
  Trained() {
    const CliResult gen = Cli({"gen", "--rows", "400", "--test-rows", "200", "--features", "300", "--labels", "40",
                               "--out", dir.path()});
    EXPECT_EQ(gen.code, 0) << gen.err;
    const CliResult trained =
        Cli({"train", "--train", train, "--epochs", "1", "--hidden", "8", "--model", model});
    EXPECT_EQ(trained.code, 0) << trained.err;
  }
};

TEST(OutputErrors, EvalPredictAndInfoWithAFullStdoutFailNamingIt) {
  Trained t;
  const std::vector<std::vector<std::string>> commands = {
      {"eval", "--model", t.model, "--test", t.test},
      {"predict", "--model", t.model, "--input", t.test},
      {"info", t.test},
  };
  for (const std::vector<std::string>& args : commands) {
    const std::string err = t.dir.File("err.txt");
    const int code = testing::WaitForExit(testing::SpawnCli(args, "/dev/full", err));
    const std::string text = ReadFile(err);
    EXPECT_EQ(code, 1) << args[0] << ": " << text;
    EXPECT_NE(text.find("error: stdout: write failed: No space left on device"), std::string::npos)
        << args[0] << ": " << text;
  }
}

// Training whose stdout fails stops at the next safe point as a signal would stop it, with a
// checkpoint to resume from, and no model file: it is not a finished run.
TEST(OutputErrors, TrainWithAFullStdoutStopsWithACheckpointAndResumes) {
  Trained t;
  const std::string checkpoints = t.dir.File("ckpt"), model = t.dir.File("run.xmlt"), err = t.dir.File("err.txt");
  std::vector<std::string> args = {"train", "--train", t.train, "--test", t.test, "--epochs", "3", "--hidden", "8",
                                   "--checkpoint-dir", checkpoints, "--model", model};
  const int code = testing::WaitForExit(testing::SpawnCli(args, "/dev/full", err));
  const std::string text = ReadFile(err);
  EXPECT_EQ(code, 1) << text;
  EXPECT_NE(text.find("error: stdout: write failed: No space left on device"), std::string::npos) << text;
  EXPECT_NE(text.find("resume with --resume " + checkpoints), std::string::npos) << text;
  EXPECT_NO_THROW(run::CheckpointReader::Open(checkpoints));
  EXPECT_FALSE(std::filesystem::exists(model));
  args.insert(args.end(), {"--resume", checkpoints});
  const CliResult resumed = Cli(args);
  EXPECT_EQ(resumed.code, 0) << resumed.err;
  EXPECT_TRUE(std::filesystem::exists(model));
}

// Issue 63, row 4: a metrics file whose write failed (a full disk; here /dev/full) ended the run
// at once, with no model and no checkpoint. The run says so and trains on to its model and
// checkpoint, prints its summary and exits 1 naming the file; a resume gives the metrics again.
TEST(OutputErrors, AFullMetricsFileIsSaidAndTheRunTrainsOnToItsModelAndCheckpoint) {
  if (!std::filesystem::exists("/dev/full")) GTEST_SKIP() << "no /dev/full on this system";
  Trained t;
  const std::string checkpoints = t.dir.File("ckpt"), model = t.dir.File("run.xmlt");
  std::vector<std::string> args = {"train", "--train", t.train, "--test", t.test, "--epochs", "3", "--eval-every",
                                   "epoch", "--hidden", "8", "--checkpoint-dir", checkpoints, "--model", model};
  std::vector<std::string> full = args;
  full.insert(full.end(), {"--metrics", "/dev/full"});
  const CliResult failed = Cli(full);
  EXPECT_EQ(failed.code, 1) << failed.err;
  EXPECT_NE(failed.err.find("warning: /dev/full: write failed at evaluation 1: No space left on device; training "
                            "goes on"),
            std::string::npos)
      << failed.err;
  EXPECT_NE(failed.err.find("error: /dev/full: write failed at evaluation 1: No space left on device"),
            std::string::npos)
      << failed.err;
  EXPECT_EQ(testing::Lines(failed.out).size(), 4u) << failed.out;  // three evaluations and the summary
  EXPECT_TRUE(std::filesystem::exists(model));
  EXPECT_NO_THROW(run::CheckpointReader::Open(checkpoints));
  // The finished run's checkpoint holds every evaluation: resumed with a metrics file that can be
  // written, it writes them all.
  const std::string metrics = t.dir.File("m.jsonl");
  std::vector<std::string> resume = args;
  resume.insert(resume.end(), {"--resume", checkpoints, "--metrics", metrics});
  const CliResult resumed = Cli(resume);
  EXPECT_EQ(resumed.code, 0) << resumed.err;
  EXPECT_EQ(testing::Lines(ReadFile(metrics)).size(), 3u);
}

}  // namespace
}  // namespace xmlt::apps
