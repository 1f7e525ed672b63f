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

}  // namespace
}  // namespace xmlt::apps
