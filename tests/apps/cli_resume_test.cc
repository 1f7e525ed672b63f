// Resuming through the command line: a refused --resume names what changed and keeps the
// interrupted run's metrics; divergences stop a run that a resume with a lower rate goes on with.
#include "apps/cli.h"
#include "kernels/cpu/bf16_gemm.h"
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

// Issue: reliability, second round, row 14: a refused --resume keeps the interrupted run's metrics.
TEST(CliTest, ARefusedResumeKeepsThePartialMetrics) {
  Data d;
  const std::string metrics = d.dir.File("m.jsonl");
  const std::string partial = metrics + ".partial";
  xmlt::testing::WriteFile(partial, "{\"earlier\": true}\n");
  const CliResult r = Cli({"train", "--train", d.train, "--test", d.test, "--metrics", metrics, "--resume",
                           d.dir.File("no-checkpoint-here")});
  EXPECT_NE(r.code, 0) << Describe(r);
  EXPECT_EQ(xmlt::testing::ReadFile(partial), "{\"earlier\": true}\n");
}

// Issue: reliability, second round, row 10. A refused --resume names values, not enum numbers,
// and blames --normalize rather than the data's checksum.
TEST(CliTest, ARefusedResumeNamesTheChangedValues) {
  Data d;
  const std::string dir = d.dir.File("ckpt");
  const std::vector<std::string> base = {"train", "--train", d.train, "--epochs", "1", "--devices", "cpu:2",
                                         "--checkpoint-dir", dir};
  std::vector<std::string> first = base;
  first.insert(first.end(), {"--algo", "adaptive"});
  ASSERT_EQ(Cli(first).code, 0);
  std::vector<std::string> other_algo = base;
  other_algo.insert(other_algo.end(), {"--algo", "elastic", "--resume", dir});
  const CliResult algo = Cli(other_algo);
  EXPECT_EQ(algo.code, 2) << Describe(algo);
  EXPECT_NE(algo.err.find("--merge: checkpoint \"normalized\", now \"average\" (set by --algo)"), std::string::npos)
      << Describe(algo);
  std::vector<std::string> other_normalize = first;
  other_normalize.insert(other_normalize.end(), {"--normalize", "none", "--resume", dir});
  const CliResult normalize = Cli(other_normalize);
  EXPECT_EQ(normalize.code, 2) << Describe(normalize);
  EXPECT_NE(normalize.err.find("--normalize: checkpoint \"l2\", now \"none\""), std::string::npos) << Describe(normalize);
  EXPECT_EQ(normalize.err.find("checksum"), std::string::npos) << Describe(normalize);
}

// Two epochs of `algo` (on two devices unless single) checkpointed in `dir`; the --test value is
// at index 4 and the --epochs value at index 6.
std::vector<std::string> CheckpointedRun(const Data& d, const std::string& algo, const std::string& dir) {
  std::vector<std::string> run = {"train", "--train", d.train, "--test", d.test, "--epochs", "2",
                                  "--algo", algo, "--checkpoint-dir", dir};
  if (algo != "single") run.insert(run.end(), {"--devices", "cpu:2"});
  return run;
}

// Issue: reliability, second round, row 8. --resume refuses another test set (one run's metrics
// are of one test set) and an --epochs below what the checkpoint has trained.
TEST(CliTest, ResumeRefusesAnotherTestSetAndFewerEpochs) {
  Data d;
  for (const std::string algo : {"single", "adaptive"}) {
    const std::string dir = d.dir.File("ckpt-" + algo);
    std::vector<std::string> run = CheckpointedRun(d, algo, dir);
    ASSERT_EQ(Cli(run).code, 0) << algo;
    std::vector<std::string> other_test = run;
    other_test[4] = d.train;  // --test
    other_test.insert(other_test.end(), {"--resume", dir});
    const CliResult test = Cli(other_test);
    EXPECT_EQ(test.code, 2) << Describe(test);
    EXPECT_NE(test.err.find("--test (checksum)"), std::string::npos) << Describe(test);
    std::vector<std::string> fewer = run;
    fewer[6] = "1";  // --epochs
    fewer.insert(fewer.end(), {"--resume", dir});
    const CliResult epochs = Cli(fewer);
    EXPECT_EQ(epochs.code, 2) << Describe(epochs);
    EXPECT_NE(epochs.err.find("the run asks for 1 epochs, but the checkpoint has trained 2"), std::string::npos)
        << Describe(epochs);
  }
}

// Issue: reliability, third round, row 5. A test row whose values overflow the unnormalized
// forward pass gives a non-finite test loss; the checkpoint holding that evaluation must resume.
TEST(CliTest, ACheckpointHoldingANonFiniteEvaluationResumes) {
  Data d;
  const std::string test = d.dir.File("overflowing-test.txt"), dir = d.dir.File("ckpt"),
                    metrics = d.dir.File("m.jsonl");
  std::string overflowing = "0";  // every feature near the float maximum: the hidden sums overflow
  for (int id = 0; id < kFeatures; ++id) overflowing += " " + std::to_string(id) + ":3e38";
  WriteFile(test, "2 " + std::to_string(kFeatures) + " " + std::to_string(kLabels) + "\n" + overflowing + "\n1 6:1\n");
  std::vector<std::string> run = {"train", "--train", d.train, "--test", test, "--normalize", "none", "--hidden", "8",
                                  "--epochs", "1", "--checkpoint-dir", dir, "--metrics", metrics};
  const CliResult first = Cli(run);
  ASSERT_EQ(first.code, 0) << Describe(first);
  const json record = json::parse(Lines(ReadFile(metrics)).back());
  ASSERT_TRUE(record["loss"].is_null()) << "the test loss is finite; the row does not overflow: " << record.dump();
  run[10] = "2";  // --epochs
  run.insert(run.end(), {"--resume", dir});
  const CliResult resumed = Cli(run);
  EXPECT_EQ(resumed.code, 0) << Describe(resumed);
  EXPECT_EQ(Lines(ReadFile(metrics)).size(), 2u);
}

// Issue: reliability, second round, row 16. A loss explosion is a divergence (rolled back, then
// the run stops), and the advice it gives works: --resume with a lower --lr.
TEST(CliTest, ALossExplosionStopsTheRunAndAResumeWithALowerRateGoesOn) {
  Data d;
  for (const std::string algo : {"single", "adaptive"}) {
    const std::string dir = d.dir.File("ckpt-" + algo);
    std::vector<std::string> run = CheckpointedRun(d, algo, dir);
    run.insert(run.end(), {"--lr", "1e6"});
    const CliResult diverged = Cli(run);
    EXPECT_EQ(diverged.code, 1) << Describe(diverged);
    EXPECT_NE(diverged.err.find("above 100x the first batch's"), std::string::npos) << Describe(diverged);
    EXPECT_NE(diverged.err.find("--resume " + dir + " with a lower --lr"), std::string::npos) << Describe(diverged);
    run.back() = "0.3";
    run.insert(run.end(), {"--resume", dir});
    const CliResult resumed = Cli(run);
    EXPECT_EQ(resumed.code, 0) << Describe(resumed);
    EXPECT_NE(resumed.err.find("with the lower learning rate"), std::string::npos) << Describe(resumed);
    // The state resumed from is sound. Several devices merge their first exploded steps into a
    // finite model before any loss crosses the limit; the rollback target is therefore a state
    // whose next mega-batch was sound, not the last one merged.
    EXPECT_LT(LastJsonLine(resumed)["train_loss"].get<double>(), 10.0) << Describe(resumed);
    run.back() = dir;
    *(run.end() - 3) = "0.5";  // a higher rate than the checkpoint's is still refused
    EXPECT_EQ(Cli(run).code, 2);
  }
}

// Issue: reliability, third round, row 9. --max-rollbacks is what one run may try: a run resumed
// after a divergence stop gets its own rollbacks, and a stop says how many this run made. (The
// checkpoint's count, above the maximum, made the resumed run stop at its first divergence,
// "after 3 rollbacks", none of them its own.)
TEST(CliTest, ARunResumedAfterADivergenceStopHasItsOwnRollbacks) {
  Data d;
  for (const std::string algo : {"single", "adaptive"}) {
    const std::string dir = d.dir.File("ckpt-rollbacks-" + algo);
    std::vector<std::string> run = CheckpointedRun(d, algo, dir);
    run.insert(run.end(), {"--lr", "1e6"});
    ASSERT_EQ(Cli(run).code, 1) << algo;
    // A rate that still diverges: each rollback halves it, and the run stops after its own three.
    run.back() = "1e5";
    run.insert(run.end(), {"--resume", dir});
    const CliResult resumed = Cli(run);
    EXPECT_EQ(resumed.code, 1) << Describe(resumed);
    for (const char* said : {"rolled back", "(rollback 1 of at most 3)", "(rollback 3 of at most 3)",
                             "after 3 rollbacks with halved learning rates"})
      EXPECT_NE(resumed.err.find(said), std::string::npos) << algo << ": " << said << "\n" << Describe(resumed);
  }
}

// Issue: reliability, third round, row 14. Raw values around 1e30 with --normalize none diverge
// whatever the rate: the advice names --normalize, not a lower --lr.
TEST(CliTest, ADivergenceOnHugeRawValuesAdvisesNormalizingThem) {
  Data d;
  std::string text = ReadFile(d.train), huge;
  // Every feature value v becomes v * 1e30 ("id:v" -> "id:ve30"); the header line has no ':'.
  for (size_t k = 0; k < text.size(); ++k) {
    huge += text[k];
    if (text[k] == ':') {
      while (k + 1 < text.size() && std::isdigit(static_cast<unsigned char>(text[k + 1]))) huge += text[++k];
      huge += "e30";
    }
  }
  const std::string train = d.dir.File("huge.txt");
  WriteFile(train, huge);
  const CliResult r = Cli({"train", "--train", train, "--normalize", "none", "--epochs", "1", "--hidden", "8"});
  EXPECT_EQ(r.code, 1) << Describe(r);
  EXPECT_NE(r.err.find("the training rows hold feature values up to 3e+30 and --normalize none passes them on"),
            std::string::npos)
      << Describe(r);
  EXPECT_EQ(r.err.find("lower --lr"), std::string::npos) << Describe(r);
}

// Issue: reliability, fourth round, row 9. A resume took a changed --propensity, and the metrics
// file then mixed PSP values under two models. Refused, as another test set is.
TEST(CliTest, ResumeRefusesAnotherPropensityModel) {
  Data d;
  const std::string dir = d.dir.File("ckpt");
  std::vector<std::string> run = CheckpointedRun(d, "single", dir);
  run.insert(run.end(), {"--propensity", "0.6,2.6"});
  ASSERT_EQ(Cli(run).code, 0);
  std::vector<std::string> other = run;
  other.back() = "0.55,1.5";
  other[6] = "3";  // --epochs
  other.insert(other.end(), {"--resume", dir});
  const CliResult r = Cli(other);
  EXPECT_EQ(r.code, 2) << Describe(r);
  EXPECT_NE(r.err.find("--propensity: checkpoint [0.6,2.6], now (not set)"), std::string::npos) << Describe(r);
  run[6] = "3";
  run.insert(run.end(), {"--resume", dir});
  EXPECT_EQ(Cli(run).code, 0);
}

// Issue: reliability, fourth round, row 10. A resume without --lr went on at the default rate
// ("resumed ... with the lower learning rate 0.300000" after a --lr 1 run), and --lr auto
// searched again. Without a number, a resume takes the checkpoint's rate; a lower --lr is taken
// and said.
TEST(CliTest, AResumeWithoutLrGoesOnAtTheCheckpointsRate) {
  Data d;
  for (const std::string algo : {"single", "adaptive"}) {
    const std::string dir = d.dir.File("ckpt-" + algo);
    std::vector<std::string> run = CheckpointedRun(d, algo, dir);
    run.insert(run.end(), {"--lr", "1"});
    ASSERT_EQ(Cli(run).code, 0) << algo;
    std::vector<std::string> resume = CheckpointedRun(d, algo, dir);
    resume[6] = "3";  // --epochs
    resume.insert(resume.end(), {"--resume", dir});
    const CliResult plain = Cli(resume);
    ASSERT_EQ(plain.code, 0) << Describe(plain);
    EXPECT_EQ(plain.err.find("lower learning rate"), std::string::npos) << algo << ": " << Describe(plain);
    EXPECT_NE(plain.err.find(algo == "single" ? "SGD at lr 1 " : "SGD at lr 2 "), std::string::npos)
        << algo << ": " << Describe(plain);  // adaptive scales 1 by its 2 devices
    resume[6] = "4";
    resume.insert(resume.end(), {"--lr", "auto"});
    const CliResult automatic = Cli(resume);
    ASSERT_EQ(automatic.code, 0) << Describe(automatic);
    EXPECT_EQ(automatic.err.find("held out"), std::string::npos) << algo << ": searched again: " << Describe(automatic);
    EXPECT_EQ(automatic.err.find("lower learning rate"), std::string::npos) << algo << ": " << Describe(automatic);
    resume.back() = "0.25";
    resume[6] = "5";
    const CliResult lower = Cli(resume);
    ASSERT_EQ(lower.code, 0) << Describe(lower);
    EXPECT_NE(lower.err.find("with the lower learning rate"), std::string::npos) << algo << ": " << Describe(lower);
  }
}

// Issue: reliability, fifth round, row 5. A run that lost its GPU (--math auto: fp32 there) and was
// restarted on CPUs as documented, with the same flags, was refused: "--math: checkpoint (not set),
// now bf16", auto resolving to bf16 on a CPU that has it. A resume with --math auto keeps the
// checkpoint's math; one given explicitly is still compared. (Here the first run's fp32 is given,
// as the GPU would have made it; on a CPU without bf16, auto is fp32 anyway.)
TEST(CliTest, AResumeWithMathAutoKeepsTheCheckpointsMath) {
  Data d;
  const std::string dir = d.dir.File("ckpt");
  std::vector<std::string> run = CheckpointedRun(d, "single", dir);
  std::vector<std::string> first = run;
  first.insert(first.end(), {"--math", "fp32"});
  ASSERT_EQ(Cli(first).code, 0);
  std::vector<std::string> resume = run;
  resume[6] = "3";  // --epochs
  resume.insert(resume.end(), {"--resume", dir});
  const CliResult same_flags = Cli(resume);
  ASSERT_EQ(same_flags.code, 0) << Describe(same_flags);
  EXPECT_NE(same_flags.err.find("output products in fp32"), std::string::npos) << Describe(same_flags);
  resume[6] = "4";
  resume.insert(resume.end(), {"--math", "auto"});
  const CliResult automatic = Cli(resume);
  ASSERT_EQ(automatic.code, 0) << Describe(automatic);
  EXPECT_NE(automatic.err.find("output products in fp32"), std::string::npos) << Describe(automatic);
}

// A checkpoint of an fp32 optimizer state (one written before --optimizer-state, or told fp32)
// resumes with --optimizer-state auto in fp32 where auto would pick bf16, and so exactly; one of a
// bf16 state resumes in bf16. Told the other state, the resume is refused naming the flag.
TEST(CliTest, AResumeWithOptimizerStateAutoKeepsTheCheckpointsState) {
  if (!kernels::cpu::Bf16Available(nullptr)) GTEST_SKIP() << "no native bf16 here: auto is fp32 either way";
  Data d;
  for (const std::string state : {"fp32", "bf16"}) {
    const std::string dir = d.dir.File("ckpt-" + state);
    std::vector<std::string> run = CheckpointedRun(d, "single", dir);
    std::vector<std::string> first = run;
    first.insert(first.end(), {"--optimizer-state", state});
    ASSERT_EQ(Cli(first).code, 0) << state;
    std::vector<std::string> resume = run;
    resume[6] = "3";  // --epochs
    resume.insert(resume.end(), {"--resume", dir});
    const CliResult automatic = Cli(resume);
    ASSERT_EQ(automatic.code, 0) << Describe(automatic);
    EXPECT_EQ(automatic.err.find("optimizer state in bf16") != std::string::npos, state == "bf16") << Describe(automatic);
    resume[6] = "4";
    resume.insert(resume.end(), {"--optimizer-state", state == "bf16" ? "fp32" : "bf16"});
    const CliResult other = Cli(resume);
    EXPECT_EQ(other.code, 2) << Describe(other);
    EXPECT_NE(other.err.find("--optimizer-state: checkpoint"), std::string::npos) << Describe(other);
  }
}

// Issue 61, point 6. A resume refused for its rate showed the scaled rates alone ("--lr:
// checkpoint 5.0, now 10.0" after --lr 5 both times), and without --lr another --lr-scaling was
// taken and ignored. Each side's rate now comes with the flags it came from, and the scaling is
// a setting a resume is refused for, by name.
TEST(CliTest, AResumeSaysTheRateAsGivenAndRefusesAnotherScaling) {
  Data d;
  const std::string dir = d.dir.File("ckpt");
  std::vector<std::string> run = CheckpointedRun(d, "adaptive", dir);
  run.insert(run.end(), {"--lr", "5", "--lr-scaling", "none"});
  ASSERT_EQ(Cli(run).code, 0);
  std::vector<std::string> scaled = CheckpointedRun(d, "adaptive", dir);
  scaled.insert(scaled.end(), {"--lr", "5", "--resume", dir});
  const CliResult given = Cli(scaled);
  EXPECT_EQ(given.code, 2) << Describe(given);
  EXPECT_NE(given.err.find("--lr: checkpoint 5.0 (--lr 5, --lr-scaling none on 2 devices), now 10.0 (--lr 5 scaled "
                           "linear for 2 devices)"),
            std::string::npos)
      << Describe(given);
  EXPECT_NE(given.err.find("--lr-scaling: checkpoint \"none\", now \"linear\""), std::string::npos) << Describe(given);
  std::vector<std::string> unscaled = CheckpointedRun(d, "adaptive", dir);
  unscaled.insert(unscaled.end(), {"--lr-scaling", "sqrt", "--resume", dir});
  const CliResult ignored = Cli(unscaled);
  EXPECT_EQ(ignored.code, 2) << Describe(ignored);
  EXPECT_NE(ignored.err.find("--lr-scaling: checkpoint \"none\", now \"sqrt\""), std::string::npos) << Describe(ignored);
  // The same flags resume.
  run[6] = "3";  // --epochs
  run.insert(run.end(), {"--resume", dir});
  const CliResult same = Cli(run);
  EXPECT_EQ(same.code, 0) << Describe(same);
}

}  // namespace
}  // namespace xmlt::apps
