// A checkpoint folder belongs to one run. Issue: reliability, third round, rows 2 and 13: a run
// without --resume must not replace another run's checkpoint, and no other output of the run
// (--model, --metrics) may be the folder or a file the checkpoint keeps in it. Both are refused
// before the data is read, with exit 2, and the checkpoint is left as it was.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>

#include "run/checkpoint_file.h"
#include "tests/apps/cli_runner.h"
#include "tests/test_support.h"

namespace xmlt::apps {
namespace {

namespace fs = std::filesystem;
using testing::Cli;
using testing::CliResult;
using xmlt::testing::ReadFile;
using xmlt::testing::TempDir;

std::string Describe(const CliResult& r) {
  return "exit " + std::to_string(r.code) + "\n--- stdout:\n" + r.out + "\n--- stderr:\n" + r.err;
}

struct Pair {
  TempDir dir;
  std::string train = dir.File("train.txt"), test = dir.File("test.txt");
  Pair() {
    const CliResult gen = Cli({"gen", "--rows", "300", "--test-rows", "100", "--features", "200", "--labels", "20",
                               "--out", dir.path()});
    EXPECT_EQ(gen.code, 0) << gen.err;
  }
  // One epoch unless `extra` gives --epochs (CLI11 refuses a flag given twice).
  std::vector<std::string> Run(std::vector<std::string> extra) const {
    std::vector<std::string> args = {"train", "--train", train, "--test", test, "--hidden", "8"};
    if (std::find(extra.begin(), extra.end(), "--epochs") == extra.end()) args.insert(args.end(), {"--epochs", "1"});
    args.insert(args.end(), extra.begin(), extra.end());
    return args;
  }
};

TEST(CheckpointFolder, ARunWithoutResumeDoesNotReplaceAnotherRunsCheckpoint) {
  Pair p;
  const std::string folder = p.dir.File("ck"), other = p.dir.File("other");
  ASSERT_EQ(Cli(p.Run({"--checkpoint-dir", folder, "--seed", "1"})).code, 0);
  ASSERT_EQ(Cli(p.Run({"--checkpoint-dir", other, "--seed", "3"})).code, 0);
  const std::string before = ReadFile(run::CheckpointPath(folder));

  const CliResult again = Cli(p.Run({"--checkpoint-dir", folder, "--seed", "2"}));
  EXPECT_EQ(again.code, 2) << Describe(again);
  EXPECT_NE(again.err.find("--checkpoint-dir " + folder + " holds the checkpoint of an earlier run; pass --resume " +
                           folder + " to continue it, or choose another folder"),
            std::string::npos)
      << Describe(again);
  EXPECT_TRUE(again.out.empty()) << "trained before refusing: " << Describe(again);
  // Resuming another run while checkpointing into this folder would replace it just the same.
  const CliResult elsewhere = Cli(p.Run({"--checkpoint-dir", folder, "--seed", "3", "--resume", other, "--epochs", "2"}));
  EXPECT_EQ(elsewhere.code, 2) << Describe(elsewhere);
  EXPECT_NE(elsewhere.err.find("holds the checkpoint of an earlier run"), std::string::npos) << Describe(elsewhere);
  EXPECT_TRUE(ReadFile(run::CheckpointPath(folder)) == before) << "the checkpoint was replaced";

  // Continuing the run is what the folder is for; an empty folder (or one holding only its lock)
  // takes a new run.
  const CliResult resumed = Cli(p.Run({"--checkpoint-dir", folder, "--seed", "1", "--resume", folder, "--epochs", "2"}));
  EXPECT_EQ(resumed.code, 0) << Describe(resumed);
  const std::string empty = p.dir.File("empty");
  fs::create_directory(empty);
  EXPECT_EQ(Cli(p.Run({"--checkpoint-dir", empty})).code, 0);
}

TEST(CheckpointFolder, OutputsOnTheCheckpointFolderOrItsFilesAreRefusedBeforeTraining) {
  Pair p;
  const std::string folder = p.dir.File("run");
  for (const std::string flag : {"--model", "--metrics"}) {
    for (const std::string& path : std::vector<std::string>{folder, folder + "/checkpoint.xmlc", folder + "/lock", folder + "/./checkpoint.xmlc"}) {
      const CliResult r = Cli(p.Run({"--checkpoint-dir", folder, flag, path}));
      EXPECT_EQ(r.code, 2) << flag << " " << path << "\n" << Describe(r);
      EXPECT_NE(r.err.find(flag + " " + path + " is in the --checkpoint-dir folder"), std::string::npos)
          << flag << " " << path << "\n" << Describe(r);
      EXPECT_TRUE(r.out.empty()) << "trained before refusing: " << Describe(r);
    }
  }
  // A resumed run checkpoints into its --resume folder: the same holds there.
  ASSERT_EQ(Cli(p.Run({"--checkpoint-dir", folder})).code, 0);
  const std::string before = ReadFile(run::CheckpointPath(folder));
  const CliResult r = Cli(p.Run({"--resume", folder, "--epochs", "2", "--model", run::CheckpointPath(folder)}));
  EXPECT_EQ(r.code, 2) << Describe(r);
  EXPECT_NE(r.err.find("--model " + run::CheckpointPath(folder) + " is in the --resume folder"), std::string::npos)
      << Describe(r);
  EXPECT_TRUE(ReadFile(run::CheckpointPath(folder)) == before) << "the checkpoint was replaced";
  // Other files in the folder are the user's to choose.
  const CliResult beside = Cli(p.Run({"--resume", folder, "--epochs", "2", "--model", folder + "/model.xmlt"}));
  EXPECT_EQ(beside.code, 0) << Describe(beside);
  EXPECT_TRUE(fs::exists(folder + "/model.xmlt"));
}

}  // namespace
}  // namespace xmlt::apps
