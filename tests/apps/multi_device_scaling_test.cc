// Four devices must keep pace with one, epoch for epoch, from the start: the extra throughput of
// several devices is worth nothing when the merged replicas spend it catching up. Bibtex, the
// defaults, evaluated after every mega-batch, on the virtual clock (deterministic for a seed).
// A constant rate stands for the first tenth of the default 20-epoch cosine schedule, whose
// factor stays above 0.97 there. docs/experiments/multi-device-scaling.md has the measurements.
#include <gtest/gtest.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "tests/apps/cli_runner.h"
#include "tests/test_support.h"

namespace xmlt::apps {
namespace {

using nlohmann::json;

struct Evaluation {
  double epoch = 0, p1 = 0, virtual_s = 0;
};

std::vector<Evaluation> TrainTwoEpochs(const std::string& folder, const std::string& devices,
                                       const std::vector<std::string>& extra) {
  xmlt::testing::TempDir dir;
  const std::string metrics = dir.File("metrics.jsonl");
  std::vector<std::string> args = {"train",    "--train",      folder + "/train.txt", "--test", folder + "/test.txt",
                                   "--algo",   "adaptive",     "--devices",           devices,  "--epochs",
                                   "2",        "--eval-every", "1",                   "--ranker", "off", "--lr-schedule", "constant",
                                   "--metrics", metrics};
  args.insert(args.end(), extra.begin(), extra.end());
  const testing::CliResult r = testing::Cli(args);
  EXPECT_EQ(r.code, 0) << r.err;
  std::vector<Evaluation> evaluations;
  for (const std::string& line : testing::Lines(xmlt::testing::ReadFile(metrics))) {
    const json j = json::parse(line);
    evaluations.push_back({j["epoch"].get<double>(), j["p1"].get<double>(), j["train_time_s"].get<double>()});
  }
  return evaluations;
}

// One device reaches P@1 0.621 within its first two epochs (0.611 while the epoch's short last
// batch stepped at the full rate). Four devices are at 0.594 after two (0.955 of it, on the AVX2
// and AVX-512 paths alike); without the mega-batch warm-up, at 0.569 (0.915). The bar, 0.93, sits
// between.
TEST(MultiDeviceScalingTest, FourDevicesKeepPaceWithOneOverTheFirstTwoEpochsOfBibtex) {
  const std::string folder = xmlt::testing::SharedDataDir("bibtex");
  if (folder.empty()) GTEST_SKIP() << "bibtex not found (set XMLT_DATA_DIR or provide ../shared/data/bibtex)";
  const std::vector<Evaluation> one = TrainTwoEpochs(folder, "cpu:1", {});
  const std::vector<Evaluation> four = TrainTwoEpochs(folder, "cpu:4", {"--speed", "1,1.1,1.2,1.32"});
  ASSERT_FALSE(one.empty());
  ASSERT_FALSE(four.empty());
  double best_one = 0;
  for (const Evaluation& e : one) best_one = std::max(best_one, e.p1);
  EXPECT_DOUBLE_EQ(four.back().epoch, 2.0);
  EXPECT_GE(four.back().p1, 0.93 * best_one) << "four devices after two epochs against one device's best in two";
  // And they get there in well under half of one device's virtual time (the speeds add up to 3.5x).
  EXPECT_LT(four.back().virtual_s, 0.4 * one.back().virtual_s);
}

}  // namespace
}  // namespace xmlt::apps
