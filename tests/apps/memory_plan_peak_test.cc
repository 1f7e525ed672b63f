// The memory plan against what the binary really holds: a run of a 38.6M-parameter model on two
// CPU devices must peak within its plan plus the fixed cost of the process (the binary and its
// libraries, measured here on a tiny model), and the plan must not be far above the peak either.
// Every term counts here: the global model's five copies alone are 740 MiB of the 2,118 MiB plan,
// so a plan that left out three quarters of them falls short by 550 MiB. The full Table 1 shapes
// are checked the same way by the full-shape tier (tests/fullshape).
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/wait.h>

#include <string>
#include <vector>

#include "tests/apps/child_process.h"
#include "tests/apps/cli_runner.h"
#include "tests/test_support.h"

namespace xmlt::apps {
namespace {

struct Measured {
  int code = -1;
  std::string err;
  double peak_mib = 0;  // the child's peak resident memory
  double plan_mib = -1;  // "planned host memory N MiB" on its stderr
};

// Runs the binary with `args`, its stderr kept in `dir`.
Measured RunBinary(const std::vector<std::string>& args, const std::string& dir) {
  const std::string err_path = dir + "/child.err";
  const pid_t child = testing::SpawnCli(args, "/dev/null", err_path);
  Measured m;
  int status = 0;
  struct rusage usage {};
  wait4(child, &status, 0, &usage);  // WaitForExit without the child's peak memory
  m.code = WIFEXITED(status) ? WEXITSTATUS(status) : 1000 + WTERMSIG(status);
  m.peak_mib = double(usage.ru_maxrss) / 1024.0;
  m.err = xmlt::testing::ReadFile(err_path);
  const std::string marker = "planned host memory ";
  const size_t at = m.err.find(marker);
  if (at != std::string::npos) m.plan_mib = std::stod(m.err.substr(at + marker.size()));
  return m;
}

Measured Train(const std::string& features, const std::string& labels, const std::string& hidden,
               const xmlt::testing::TempDir& work) {
  const std::string data = work.File("data-" + labels);
  const testing::CliResult gen = testing::Cli({"gen", "--rows", "512", "--test-rows", "50", "--features", features,
                                               "--labels", labels, "--out", data});
  EXPECT_EQ(gen.code, 0) << gen.err;
  return RunBinary({"train", "--train", data + "/train.txt", "--test", data + "/test.txt", "--algo", "adaptive",
                    "--devices", "cpu:2", "--hidden", hidden, "--batch", "128", "--epochs", "0.5"},
                   work.path());
}

TEST(MemoryPlanPeak, ARunPeaksWithinItsPlanPlusTheProcessFixedCost) {
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  GTEST_SKIP() << "a sanitizer's shadow memory and quarantine are part of the peak resident memory in this build";
#endif
  xmlt::testing::TempDir work;
  const Measured tiny = Train("100", "20", "8", work);
  ASSERT_EQ(tiny.code, 0) << tiny.err;
  ASSERT_GE(tiny.plan_mib, 0) << tiny.err;
  const double fixed_cost = tiny.peak_mib - tiny.plan_mib;  // about 220 MiB here
  const Measured big = Train("100000", "200000", "128", work);
  ASSERT_EQ(big.code, 0) << big.err;
  ASSERT_GT(big.plan_mib, 1500) << big.err;
  const double used = big.peak_mib - fixed_cost;
  EXPECT_LE(big.peak_mib, big.plan_mib * 1.05 + fixed_cost)
      << "the run used more than it planned: peak " << big.peak_mib << " MiB, plan " << big.plan_mib
      << " MiB, fixed cost " << fixed_cost << " MiB";
  EXPECT_LE(big.plan_mib, used * 1.2 + 64)
      << "the plan is far above what the run used: plan " << big.plan_mib << " MiB, peak " << big.peak_mib
      << " MiB, fixed cost " << fixed_cost << " MiB";
}

}  // namespace
}  // namespace xmlt::apps
