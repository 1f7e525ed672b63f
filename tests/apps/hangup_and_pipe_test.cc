// Issue: reliability, third round, row 7. A dropped ssh session (SIGHUP) and a closed output pipe
// (`train ... | head`: SIGPIPE) killed training with no checkpoint. SIGHUP now stops a run as
// SIGTERM does (checkpoint, exit 128 + 1); SIGPIPE is ignored while training, and the write that
// fails with EPIPE is an output error: the run stops at a safe point with a checkpoint, exit 1.
// Runs the real binary, which these tests signal and whose stdout they close.
#include <gtest/gtest.h>
#include <signal.h>
#include <fcntl.h>
#include <unistd.h>

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

// A generated pair and a run on it long enough to be signalled after its first checkpoint.
struct LongRun {
  TempDir dir;
  std::string checkpoints = dir.File("ckpt"), err = dir.File("err.txt"), model = dir.File("model.xmlt");
  LongRun() {
    const CliResult gen = Cli({"gen", "--rows", "20000", "--test-rows", "500", "--features", "3000", "--labels", "300",
                               "--out", dir.path()});
    EXPECT_EQ(gen.code, 0) << gen.err;
  }
  std::vector<std::string> Args() const {
    return {"train", "--train", dir.File("train.txt"), "--test", dir.File("test.txt"), "--algo", "adaptive",
            "--devices", "cpu:2", "--hidden", "32", "--batch", "64", "--mega-batch", "4", "--eval-every", "5",
            "--epochs", "4", "--checkpoint-dir", checkpoints, "--checkpoint-every", "1", "--model", model,
            "--threads", "1"};
  }
};

TEST(HangupAndPipe, SighupCheckpointsAndExits129AndTheRunResumes) {
  LongRun long_run;
  const pid_t child = testing::SpawnCli(long_run.Args(), long_run.dir.File("out.txt"), long_run.err);
  ASSERT_TRUE(testing::WaitForFile(run::CheckpointPath(long_run.checkpoints)));
  kill(child, SIGHUP);
  const int code = testing::WaitForExit(child);
  const std::string err = ReadFile(long_run.err);
  if (code == 0) GTEST_SKIP() << "the run finished before the signal arrived";
  ASSERT_EQ(code, 128 + SIGHUP) << err;
  EXPECT_NE(err.find("stopped by signal 1 at a safe point; resume with --resume " + long_run.checkpoints), std::string::npos) << err;
  EXPECT_NO_THROW(run::CheckpointReader::Open(long_run.checkpoints));
  EXPECT_FALSE(std::filesystem::exists(long_run.model));
  std::vector<std::string> resume = long_run.Args();
  resume.insert(resume.end(), {"--resume", long_run.checkpoints});
  const CliResult resumed = Cli(resume);
  EXPECT_EQ(resumed.code, 0) << resumed.err;
  EXPECT_TRUE(std::filesystem::exists(long_run.model));
}

TEST(HangupAndPipe, AClosedStdoutPipeStopsTrainingWithACheckpoint) {
  LongRun long_run;
  int pipe_ends[2];
  ASSERT_EQ(pipe2(pipe_ends, O_CLOEXEC), 0);
  const pid_t child = testing::SpawnCliWritingTo(pipe_ends[1], long_run.Args(), long_run.err);
  close(pipe_ends[1]);
  close(pipe_ends[0]);  // the reader is gone before the first line: `| head -0`
  const int code = testing::WaitForExit(child);
  const std::string err = ReadFile(long_run.err);
  ASSERT_EQ(code, 1) << "exit " << code << " (1013 is death by SIGPIPE)\n" << err;
  EXPECT_NE(err.find("error: stdout: write failed: Broken pipe; the run stopped at a safe point; resume with --resume " +
                     long_run.checkpoints),
            std::string::npos)
      << err;
  EXPECT_NO_THROW(run::CheckpointReader::Open(long_run.checkpoints));
  EXPECT_FALSE(std::filesystem::exists(long_run.model));
}

}  // namespace
}  // namespace xmlt::apps
