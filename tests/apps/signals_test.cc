// The command line under signals and with the reliability flags: SIGTERM stops a run at a safe
// point with a checkpoint and exit code 143, and --resume finishes it; two SIGINTs in a row exit
// with 130 at once and leave the previous checkpoint loadable; bad reliability flags exit 2. A run
// that finishes (exit 0) after a signal has failed the test: it ignored the signal.
// The signal tests run the real binary as a child process.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <thread>

#include "run/checkpoint_file.h"
#include "tests/apps/child_process.h"
#include "tests/apps/cli_runner.h"
#include "tests/test_support.h"

namespace xmlt::apps {
namespace {

using testing::Cli;
using testing::CliResult;
using testing::Lines;

struct GeneratedPair {
  xmlt::testing::TempDir dir;
  GeneratedPair() {
    const CliResult r = Cli({"gen", "--rows", "20000", "--test-rows", "500", "--features", "3000", "--labels", "300",
                             "--out", dir.path()});
    EXPECT_EQ(r.code, 0) << r.err;
  }
  std::string train() const { return dir.File("train.txt"); }
  std::string test() const { return dir.File("test.txt"); }
};

std::vector<std::string> LongRun(const GeneratedPair& data, const std::string& checkpoints, const std::string& metrics) {
  return {"train", "--train", data.train(), "--test", data.test(), "--algo", "adaptive", "--devices", "cpu:2",
          "--speed", "1,1.5", "--row-cost", "1e-6", "--merge-cost", "1e-9", "--hidden", "32", "--batch", "64",
          "--mega-batch", "4", "--eval-every", "5", "--epochs", "4", "--momentum", "0.5",
          "--checkpoint-dir", checkpoints, "--checkpoint-every", "1", "--metrics", metrics, "--threads", "1"};
}

// Starts the binary with `args`, its output sent to files in `dir`.
pid_t Spawn(const std::vector<std::string>& args, const std::string& dir) {
  return testing::SpawnCli(args, dir + "/child.out", dir + "/child.err");
}

TEST(Signals, SigtermCheckpointsAndExits143AndResumeFinishesTheRun) {
  GeneratedPair data;
  xmlt::testing::TempDir work;
  const std::string checkpoints = work.File("ckpt"), metrics = work.File("metrics.jsonl");
  const pid_t child = Spawn(LongRun(data, checkpoints, metrics), work.path());
  ASSERT_TRUE(testing::WaitForFile(run::CheckpointPath(checkpoints)));
  kill(child, SIGTERM);
  const int code = testing::WaitForExit(child);
  const std::string err = xmlt::testing::ReadFile(work.File("child.err"));
  // The signal comes within milliseconds of the first checkpoint, and the run goes on for about
  // two seconds after it on two cores: a run that ends with 0 ignored the signal.
  ASSERT_EQ(code, 143) << "SIGTERM did not stop the run\n" << err;
  EXPECT_NE(err.find("resume with --resume"), std::string::npos) << err;
  EXPECT_NO_THROW(run::CheckpointReader::Open(checkpoints));
  EXPECT_TRUE(std::filesystem::exists(metrics + ".partial"));
  EXPECT_FALSE(std::filesystem::exists(metrics));  // an unfinished run has no final metrics

  std::vector<std::string> resume = LongRun(data, checkpoints, metrics);
  resume.push_back("--resume");
  resume.push_back(checkpoints);
  const CliResult r = Cli(resume);
  ASSERT_EQ(r.code, 0) << r.err;
  const nlohmann::json summary = nlohmann::json::parse(Lines(r.out).back());
  EXPECT_DOUBLE_EQ(summary["epochs"].get<double>(), 4.0);
  // The metrics hold each evaluation once, in order, up to the end of the run.
  uint64_t previous = 0;
  const std::vector<std::string> lines = Lines(xmlt::testing::ReadFile(metrics));
  ASSERT_FALSE(lines.empty());
  for (const std::string& line : lines) {
    const uint64_t megabatch = nlohmann::json::parse(line)["megabatch"].get<uint64_t>();
    EXPECT_GT(megabatch, previous);
    previous = megabatch;
  }
  // 4 epochs of the 18,000 rows the ranker's held-out tenth leaves.
  EXPECT_EQ(nlohmann::json::parse(lines.back())["train_samples"].get<uint64_t>(), 4u * 18000u);
}

TEST(Signals, ASecondSignalExitsAtOnceAndTheCheckpointStaysLoadable) {
  GeneratedPair data;
  xmlt::testing::TempDir work;
  const std::string checkpoints = work.File("ckpt");
  const pid_t child = Spawn(LongRun(data, checkpoints, work.File("m.jsonl")), work.path());
  ASSERT_TRUE(testing::WaitForFile(run::CheckpointPath(checkpoints)));
  kill(child, SIGINT);
  kill(child, SIGINT);
  const int code = testing::WaitForExit(child);
  EXPECT_EQ(code, 130) << "two SIGINTs did not end the run at once\n" << xmlt::testing::ReadFile(work.File("child.err"));
  EXPECT_NO_THROW(run::CheckpointReader::Open(checkpoints));
}

TEST(ReliabilityFlags, BadValuesExitTwoWithTheFlagNamed) {
  GeneratedPair data;
  xmlt::testing::TempDir work;
  const std::vector<std::string> base = {"train", "--train", data.train(), "--epochs", "0.1", "--hidden", "8"};
  auto with = [&](std::vector<std::string> extra) {
    std::vector<std::string> args = base;
    args.insert(args.end(), extra.begin(), extra.end());
    return Cli(args);
  };
  CliResult r = with({"--algo", "adaptive", "--inject-fault", "device=1"});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("--inject-fault"), std::string::npos) << r.err;
  r = with({"--algo", "adaptive", "--devices", "cpu:2", "--inject-fault", "device=5,megabatch=1"});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("device 5 does not exist"), std::string::npos) << r.err;
  // One path for faults: single's one device can fail too, and then no device is left.
  r = with({"--inject-fault", "device=0,megabatch=1"});
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("every device failed"), std::string::npos) << r.err;
  r = with({"--algo", "adaptive", "--inject-fault", "device=0,megabatch=1,kind=gone"});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("kind=fail|nan|exit|lost"), std::string::npos) << r.err;
  r = with({"--checkpoint-every", "3"});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("--checkpoint-dir"), std::string::npos) << r.err;
  r = with({"--resume", work.File("nothing-here")});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("no checkpoint here"), std::string::npos) << r.err;
  // A model far beyond this machine fails before allocating, with the numbers, as a usage error.
  r = Cli({"train", "--train", data.train(), "--hidden", "65536,65536,65536,65536"});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("not enough memory"), std::string::npos) << r.err;
}

TEST(ReliabilityFlags, AnInjectedDeviceFaultIsReportedInTheMetricsAndTrainingGoesOn) {
  GeneratedPair data;
  xmlt::testing::TempDir work;
  const CliResult r = Cli({"train", "--train", data.train(), "--test", data.test(), "--algo", "elastic", "--devices",
                           "cpu:3", "--epochs", "0.5", "--hidden", "16", "--mega-batch", "5", "--eval-every", "3",
                           "--inject-fault", "device=2,megabatch=2", "--metrics", work.File("m.jsonl")});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.err.find("device cpu:2 dropped in mega-batch 2"), std::string::npos) << r.err;
  const std::vector<std::string> lines = Lines(xmlt::testing::ReadFile(work.File("m.jsonl")));
  ASSERT_FALSE(lines.empty());
  const nlohmann::json last = nlohmann::json::parse(lines.back());
  EXPECT_TRUE(last["devices"][2]["dropped"].get<bool>());
  EXPECT_NE(last["devices"][2]["fault"].get<std::string>().find("injected fault"), std::string::npos);
  EXPECT_EQ(last["train_samples"].get<uint64_t>(), 9000u);  // half an epoch of 18,000 rows (a tenth held out)
}

// Issue: reliability, fourth round, row 14. SIGTERM while --lr auto searched exited 143 with no
// message: the stop handlers came only with training. They now come before the data is read; a
// stop asked for before training is taken after the load or the search, and said.
TEST(Signals, ASigtermBeforeTrainingBeganIsSaidAndLeavesNoMetrics) {
  GeneratedPair data;
  xmlt::testing::TempDir work;
  const std::string metrics = work.File("m.jsonl");
  const pid_t child = Spawn({"train", "--train", data.train(), "--lr", "auto", "--hidden", "32", "--metrics", metrics,
                             "--threads", "1"},
                            work.path());
  // The metrics file is opened after the handlers are installed, and before the data is read.
  ASSERT_TRUE(testing::WaitForFile(metrics + ".partial"));
  kill(child, SIGTERM);
  const int code = testing::WaitForExit(child);
  const std::string err = xmlt::testing::ReadFile(work.File("child.err"));
  ASSERT_EQ(code, 143) << err;
  EXPECT_NE(err.find("stopped by signal 15 while"), std::string::npos) << err;
  EXPECT_NE(err.find("before training began: nothing was trained"), std::string::npos) << err;
  EXPECT_FALSE(std::filesystem::exists(metrics + ".partial")) << "the probe of the metrics path was left behind";
}

}  // namespace
}  // namespace xmlt::apps
