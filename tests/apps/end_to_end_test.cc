// End-to-end accuracy through the CLI: synthetic data from `xmltrain gen` must be learned well
// beyond the most-frequent-label baseline, and the real Bibtex and Delicious sets must reach
// published-level P@1 with the default flags.
#include <gtest/gtest.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "apps/cli.h"
#include "tests/apps/cli_runner.h"
#include "data/dataset_loader.h"
#include "tests/test_support.h"

namespace xmlt::apps {
namespace {

using nlohmann::json;

using testing::CliResult;
using testing::Cli;
using testing::Lines;

// Runs `train` and returns its summary, failing the test on a non-zero exit.
json Train(const std::vector<std::string>& args) {
  const CliResult r = Cli(args);
  EXPECT_EQ(r.code, 0) << "stdout:\n" << r.out << "\nstderr:\n" << r.err;
  const std::vector<std::string> lines = Lines(r.out);
  if (lines.empty()) return json::object();
  return json::parse(lines.back(), nullptr, false);
}

// P@1 of always answering the label most frequent in the training set.
double MostFrequentLabelP1(const data::Dataset& train, const data::Dataset& test) {
  std::vector<uint64_t> counts(train.num_labels(), 0);
  for (uint32_t label : train.labels.col_idx) ++counts[label];
  const uint32_t top = uint32_t(std::max_element(counts.begin(), counts.end()) - counts.begin());
  uint64_t hits = 0;
  for (uint64_t r = 0; r < test.num_rows(); ++r) {
    const uint32_t* begin = test.labels.col_idx.data() + test.labels.RowBegin(r);
    const uint32_t* end = test.labels.col_idx.data() + test.labels.RowEnd(r);
    hits += std::binary_search(begin, end, top) ? 1 : 0;
  }
  return test.num_rows() > 0 ? double(hits) / double(test.num_rows()) : 0.0;
}

// Best and last P@1 over the metrics file's evaluations.
std::pair<double, double> BestAndLastP1(const std::string& metrics_path) {
  double best = 0, last = 0;
  for (const std::string& line : Lines(xmlt::testing::ReadFile(metrics_path))) {
    last = json::parse(line)["p1"].get<double>();
    best = std::max(best, last);
  }
  return {best, last};
}

TEST(EndToEndTest, GeneratedDataIsLearnedWellBeyondTheFrequencyBaseline) {
  xmlt::testing::TempDir dir;
  const CliResult gen =
      Cli({"gen", "--rows", "3000", "--test-rows", "1000", "--features", "2000", "--labels", "100",
           "--nnz", "30", "--labels-per-row", "2", "--out", dir.path()});
  ASSERT_EQ(gen.code, 0) << gen.err;
  const std::string train = dir.File("train.txt"), test = dir.File("test.txt");
  const double baseline = MostFrequentLabelP1(data::LoadDataset(train), data::LoadDataset(test));

  const json summary = Train({"train", "--train", train, "--test", test, "--epochs", "5"});
  ASSERT_TRUE(summary.contains("p1")) << summary.dump();
  const double p1 = summary["p1"].get<double>();
  // Measured: baseline 0.178, P@1 0.48 after 5 epochs (0.47-0.51 over generator seeds 1-4).
  EXPECT_GE(p1, baseline + 0.15) << "P@1 " << p1 << " vs most-frequent-label baseline " << baseline;
  EXPECT_GT(baseline, 0.0);  // the baseline is a real number, not an empty computation
  RecordProperty("p1", std::to_string(p1));
  RecordProperty("baseline_p1", std::to_string(baseline));
}

// Trains a real dataset with the CLI defaults and returns (the MLP's best, the final model's) P@1.
// The metrics hold the MLP's evaluations; with the ranker (which the defaults fit on both sets)
// the summary's figures are the final model's, the MLP's last kept under "mlp".
std::pair<double, double> TrainRealDataset(const std::string& folder, size_t epochs) {
  xmlt::testing::TempDir dir;
  const std::string metrics = dir.File("metrics.jsonl");
  const json summary = Train({"train", "--train", folder + "/train.txt", "--test",
                              folder + "/test.txt", "--metrics", metrics});
  const std::pair<double, double> p1 = BestAndLastP1(metrics);
  EXPECT_DOUBLE_EQ(summary.value("mlp_best_p1", -1.0), p1.first);
  EXPECT_TRUE(summary["ranker"]["used"].get<bool>()) << summary["ranker"].dump();
  EXPECT_DOUBLE_EQ(summary["mlp"].value("p1", -1.0), p1.second);
  // One line an epoch, every planned epoch: these sets hold out fewer rows than the held-out stop
  // watches (run/holdout_stop.h).
  EXPECT_EQ(summary.value("planned_epochs", -1.0), double(epochs));
  EXPECT_FALSE(summary.contains("stopped_by_holdout_epoch")) << summary.dump();
  EXPECT_EQ(Lines(xmlt::testing::ReadFile(metrics)).size(), epochs);
  return {p1.first, summary.value("p1", -1.0)};
}

TEST(EndToEndTest, BibtexWithDefaultsReachesPublishedP1) {
  const std::string folder = xmlt::testing::SharedDataDir("bibtex");
  if (folder.empty())
    GTEST_SKIP() << "bibtex not found (set XMLT_DATA_DIR or provide ../shared/data/bibtex)";
  // 20 epochs at 1,024 units: too small a model for the ranker's narrower MLP.
  const auto [best, last] = TrainRealDataset(folder, 20);
  // Measured (hidden 1024, the first layer's Adagrad, dropout 0.5, cosine, the ranker): final
  // 0.643, the MLP's 0.633, the best XML library's 0.638 (docs/experiments/peers.md). The old
  // defaults (hidden 128, plain heavy ball, no dropout) ended at 0.583, which this bound catches.
  EXPECT_GE(best, 0.62) << "best P@1 over the evaluations";
  EXPECT_GE(last, 0.62) << "final P@1";
}

TEST(EndToEndTest, DeliciousWithDefaultsReachesPublishedP1) {
  const std::string folder = xmlt::testing::SharedDataDir("delicious");
  if (folder.empty())
    GTEST_SKIP() << "delicious not found (set XMLT_DATA_DIR or provide ../shared/data/delicious)";
  const auto [best, last] = TrainRealDataset(folder, 20);  // 512 units by its features: not narrowed
  // Measured (hidden 512, the first layer's Adagrad, dropout 0.5, cosine, the ranker): final
  // 0.681, the MLP's 0.669, the best XML library's 0.666; the old defaults ended at 0.653. Without
  // the ranker the MLP alone does not reach this bound.
  EXPECT_GE(last, 0.672) << "final P@1 (the MLP's best " << best << ")";
}

}  // namespace
}  // namespace xmlt::apps

namespace xmlt::apps {
namespace {

// The multi-device defaults (--preset default): with only --algo, --devices and --speed, every
// algorithm on four emulated devices 1.32x apart reaches 97% of one device's best P@1 at the
// default epochs. Measured on Bibtex with the defaults of docs/experiments/peers.md (one device
// 0.638, bar 0.619): adaptive 0.647, elastic 0.644, adasum 0.631, sync 0.643, crossbow 0.646.
TEST(EndToEndTest, BibtexEveryAlgorithmWithDefaultFlagsHoldsNinetySevenPercentOfOneDevice) {
  const std::string folder = xmlt::testing::SharedDataDir("bibtex");
  if (folder.empty())
    GTEST_SKIP() << "bibtex not found (set XMLT_DATA_DIR or provide ../shared/data/bibtex)";
  const json single = Train({"train", "--train", folder + "/train.txt", "--test", folder + "/test.txt"});
  ASSERT_TRUE(single.contains("mlp_best_p1")) << single.dump();
  const double bar = 0.97 * single["mlp_best_p1"].get<double>();
  for (const std::string algo : {"adaptive", "elastic", "adasum", "sync", "crossbow"}) {
    const json summary = Train({"train", "--train", folder + "/train.txt", "--test", folder + "/test.txt",
                                "--algo", algo, "--devices", "cpu:4", "--speed", "1,1.1,1.2,1.32"});
    ASSERT_TRUE(summary.contains("mlp_best_p1")) << algo << ": " << summary.dump();
    EXPECT_GE(summary["mlp_best_p1"].get<double>(), bar) << algo << " " << summary.dump();
  }
}

// --preset paper is the paper's section 5.1 as written (global momentum 0.9 over plain local SGD,
// mega-batches of 100 batches, raw perturbed weights), whatever the data: on Bibtex that is about
// 8 merges in 20 epochs (measured: adaptive best 0.244; the preset is for reproducing the paper).
TEST(EndToEndTest, BibtexPaperPresetIsThePapersSetting) {
  const std::string folder = xmlt::testing::SharedDataDir("bibtex");
  if (folder.empty())
    GTEST_SKIP() << "bibtex not found (set XMLT_DATA_DIR or provide ../shared/data/bibtex)";
  const CliResult r = Cli({"train", "--train", folder + "/train.txt", "--test", folder + "/test.txt", "--algo",
                           "adaptive", "--devices", "cpu:4", "--speed", "1,1.1,1.2,1.32", "--preset", "paper"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.err.find("preset paper for adaptive on 4 devices: --momentum 0.9 --local-momentum 0 --mega-batch 100 "
                       "--lr 0.3 (0.3 scaled none) --pert-weights raw"),
            std::string::npos)
      << r.err;
}

}  // namespace
}  // namespace xmlt::apps

namespace xmlt::apps {
namespace {

// --algo slide with only --algo given: SLIDE's sampled output layer and HOGWILD threads on one CPU
// device (Bibtex's 159 labels are fewer than the active-set minimum, so every row trains on all of
// them, as the dense step would with plain SGD). Measured with the 1024-wide default layer and
// the cosine schedule: final P@1 0.452 after 20 epochs (0.463 with 128 units and a constant rate);
// the dense default, with the first layer's Adagrad and dropout, 0.638.
TEST(EndToEndTest, BibtexSlideWithDefaultFlagsLearns) {
  const std::string folder = xmlt::testing::SharedDataDir("bibtex");
  if (folder.empty())
    GTEST_SKIP() << "bibtex not found (set XMLT_DATA_DIR or provide ../shared/data/bibtex)";
  // The final model within 3 points of the dense step's default (0.638): measured 0.644 with the
  // first layer's Adagrad and dropout, 0.452 without them.
  const json summary = Train({"train", "--train", folder + "/train.txt", "--test", folder + "/test.txt", "--algo", "slide"});
  ASSERT_TRUE(summary.contains("p1")) << summary.dump();
  EXPECT_GE(summary["p1"].get<double>(), 0.608) << summary.dump();
}

// --algo slide with rows that really sample: active sets of 200 of Delicious's 983 labels (the
// tables' candidates, the row's labels, weighted random padding), at the default rate and step.
// Measured: final P@1 0.657 in 20 epochs, against 0.668 for the dense default at 512 units.
TEST(EndToEndTest, DeliciousSlideWithRealSamplingComesCloseToDense) {
  const std::string folder = xmlt::testing::SharedDataDir("delicious");
  if (folder.empty())
    GTEST_SKIP() << "delicious not found (set XMLT_DATA_DIR or provide ../shared/data/delicious)";
  const json summary = Train({"train", "--train", folder + "/train.txt", "--test", folder + "/test.txt", "--algo",
                              "slide", "--slide-min-active", "200", "--hidden", "128"});
  ASSERT_TRUE(summary.contains("p1")) << summary.dump();
  EXPECT_GE(summary["p1"].get<double>(), 0.638) << summary.dump();
}

}  // namespace
}  // namespace xmlt::apps
