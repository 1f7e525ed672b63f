// Tests of the shortlist ranker through `xmltrain train`, `eval` and `predict`
// (apps/train_ranker.h): the rows it holds out, what the summary says, the model file it writes,
// and its flags' refusals.
#include "apps/cli.h"
#include "tests/apps/cli_runner.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <cstring>
#include <memory>
#include <nlohmann/json.hpp>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "apps/train_arguments.h"
#include "apps/train_run.h"
#include "engine/model_file.h"
#include "kernels/ranker/linear_ranker.h"
#include "kernels/model.h"
#include "tests/make_dataset.h"
#include "tests/apps/cli_test_support.h"
#include "tests/test_support.h"

namespace xmlt::apps {
namespace {

using nlohmann::json;
using namespace testing;

// Enough rows for a held-out slice of 150 (a tenth), every row labelled.
struct RankerData {
  xmlt::testing::TempDir dir;
  std::string train = dir.File("train.txt"), test = dir.File("test.txt");
  static constexpr int kTrainRows = 1500;
  RankerData() {
    xmlt::testing::WriteFile(train, MakeText(kTrainRows, 3));
    xmlt::testing::WriteFile(test, MakeText(200, 4));
  }
  std::vector<std::string> Args(std::vector<std::string> extra) const {
    std::vector<std::string> args = {"train", "--train", train, "--test", test, "--hidden", "16", "--epochs", "1"};
    args.insert(args.end(), extra.begin(), extra.end());
    return args;
  }
};

uint32_t FileVersion(const std::string& path) {
  const std::string bytes = xmlt::testing::ReadFile(path);
  uint32_t version = 0;
  std::memcpy(&version, &bytes[8], 4);
  return version;
}

TEST(CliRanker, TheDefaultHoldsOutATenthChoosesTheBlendAndEvalAgrees) {
  RankerData d;
  const std::string model = d.dir.File("m.model");
  const CliResult r = Cli(d.Args({"--model", model}));
  ASSERT_EQ(r.code, 0) << Describe(r);
  const json summary = LastJsonLine(r);
  const json& ranker = summary["ranker"];
  ASSERT_TRUE(ranker["fitted"].get<bool>()) << summary.dump();
  EXPECT_EQ(ranker["holdout_rows"].get<uint64_t>(), 150u);
  EXPECT_EQ(ranker["trials"].size(), 21u);  // two forms at 0.1 to 1, and the MLP alone
  EXPECT_TRUE(ranker["blend_chosen"].get<bool>());
  EXPECT_GT(ranker["pairs"].get<uint64_t>(), 0u);
  // The MLP trained on the other 1,350 rows, one epoch.
  EXPECT_EQ(summary["train_samples"].get<uint64_t>(), 1350u);
  EXPECT_NE(r.err.find("ranker: "), std::string::npos) << r.err;
  // Whatever blend was chosen, eval of the file gives the summary's figures: those of the final model.
  const bool used = ranker["used"].get<bool>();
  EXPECT_EQ(FileVersion(model), used ? 2u : 1u);
  EXPECT_EQ(used, summary.contains("mlp"));
  const CliResult eval = Cli({"eval", "--model", model, "--test", d.test});
  ASSERT_EQ(eval.code, 0) << Describe(eval);
  const json figures = LastJsonLine(eval);
  for (const char* key : {"p1", "p3", "p5"})
    EXPECT_DOUBLE_EQ(figures[key].get<double>(), summary[key].get<double>()) << key;
}

TEST(CliRanker, AFixedBlendIsSavedAndScoredByEvalAndPredict) {
  RankerData d;
  const std::string model = d.dir.File("m.model"), out = d.dir.File("top.txt");
  const CliResult r = Cli(d.Args({"--model", model, "--ranker-blend", "0.5", "--ranker-passes", "2"}));
  ASSERT_EQ(r.code, 0) << Describe(r);
  const json summary = LastJsonLine(r);
  EXPECT_TRUE(summary["ranker"]["used"].get<bool>());
  EXPECT_FLOAT_EQ(summary["ranker"]["blend"].get<float>(), 0.5f);
  EXPECT_EQ(summary["ranker"]["blend_form"].get<std::string>(), "geometric");
  EXPECT_EQ(summary["ranker"]["holdout_rows"].get<uint64_t>(), 0u);
  EXPECT_LE(summary["ranker"]["most_passes"].get<uint32_t>(), 2u);
  EXPECT_GE(summary["ranker"]["mean_passes"].get<double>(), 1.0);
  EXPECT_GT(summary["ranker"]["instances"].get<uint64_t>(), 1500u);
  EXPECT_EQ(summary["train_samples"].get<uint64_t>(), 1500u) << "a fixed blend holds no row out";
  ASSERT_TRUE(summary.contains("mlp"));
  EXPECT_EQ(FileVersion(model), 2u);
  const engine::TrainedModel loaded = engine::LoadModel(model);
  ASSERT_NE(loaded.ranker, nullptr);
  EXPECT_EQ(loaded.ranker->blend, 0.5f);
  EXPECT_EQ(loaded.ranker->form, kernels::BlendForm::kGeometric);
  EXPECT_EQ(loaded.ranker->shortlist, 6u) << "the shortlist is cut to the 6 labels";
  const CliResult eval = Cli({"eval", "--model", model, "--test", d.test});
  ASSERT_EQ(eval.code, 0) << Describe(eval);
  EXPECT_DOUBLE_EQ(LastJsonLine(eval)["p1"].get<double>(), summary["p1"].get<double>());
  // predict's scores are the blend, best first.
  const CliResult predict = Cli({"predict", "--model", model, "--input", d.test, "--output", out, "--top-k", "3"});
  ASSERT_EQ(predict.code, 0) << Describe(predict);
  const std::string first = Lines(xmlt::testing::ReadFile(out)).front();
  float a = 0, b = 0, c = 0;
  unsigned la = 0, lb = 0, lc = 0;
  ASSERT_EQ(std::sscanf(first.c_str(), "%u:%f %u:%f %u:%f", &la, &a, &lb, &b, &lc, &c), 6) << first;
  EXPECT_GE(a, b);
  EXPECT_GE(b, c);
}

// A model of kFeatures features and 120 labels with a ranker of shortlist 50 (the default) whose
// random weights reorder it: what a run would save, made without one.
engine::TrainedModel HandRankedModel() {
  constexpr uint32_t kModelLabels = 120;
  std::mt19937_64 rng(3);
  std::vector<xmlt::testing::DatasetRow> rows(400);
  for (size_t r = 0; r < rows.size(); ++r) {
    rows[r].features = {{uint32_t(rng() % (kFeatures / 2)), 1.0f}, {kFeatures / 2 + uint32_t(rng() % (kFeatures / 2)), 1.0f}};
    rows[r].labels = {uint32_t(r % kModelLabels)};
  }
  kernels::ModelShape shape;
  shape.num_features = kFeatures;
  shape.num_labels = kModelLabels;
  shape.hidden = {8};
  engine::TrainedModel model;
  model.mlp = kernels::InitModel<float>(shape, 5);
  auto ranker = std::make_shared<kernels::ShortlistRanker>();
  ranker->linear = kernels::BuildLinearRanker(xmlt::testing::MakeDataset(rows, kFeatures, kModelLabels), 1u << 20);
  std::normal_distribution<float> normal(0.0f, 3.0f);
  for (float& w : ranker->linear.weight) w = normal(rng);
  ranker->form = kernels::BlendForm::kGeometric;
  ranker->blend = 0.7f;
  model.ranker = ranker;
  return model;
}

TEST(CliRanker, PredictRanksEveryTopKBestFirstWithScoresThatNeverRise) {
  xmlt::testing::TempDir dir;
  const std::string model = dir.File("m.xmlt"), input = dir.File("rows.txt");
  engine::SaveModel(HandRankedModel(), model);
  xmlt::testing::WriteFile(input, MakeText(30, 4));
  std::vector<std::string> whole;  // the lines at k = 120, the label count
  for (const int k : {120, 50, 51, 100}) {
    const std::string out = dir.File("top" + std::to_string(k) + ".txt");
    const CliResult r = Cli({"predict", "--model", model, "--input", input, "--output", out, "--top-k", std::to_string(k)});
    ASSERT_EQ(r.code, 0) << Describe(r);
    const std::vector<std::string> lines = Lines(xmlt::testing::ReadFile(out));
    ASSERT_EQ(lines.size(), 30u);
    if (k == 120) whole = lines;
    for (size_t row = 0; row < lines.size(); ++row) {
      std::istringstream pairs(lines[row]);
      std::string pair;
      double last = 2.0;
      int place = 0;
      for (; pairs >> pair; ++place) {
        const double score = std::stod(pair.substr(pair.find(':') + 1));
        ASSERT_LE(score, last) << "k=" << k << " row " << row << " place " << place << ": " << lines[row];
        last = score;
      }
      EXPECT_EQ(place, k);
      EXPECT_EQ(lines[row], whole[row].substr(0, lines[row].size())) << "k=" << k << ": the first k of every list";
    }
  }
}

// Issue 61, point 3: a stop in the ranker stage was not seen (the stage ran on, exit 0), and a
// second one lost the trained MLP. The stage ends at once with 128 + the signal; --model holds
// the trained MLP alone and the metrics are finished; with --checkpoint-dir, --resume fits the
// ranker and writes the model of a run never stopped, byte for byte. The stop is asked at the
// run's last evaluation (its only one), after training and before the stage, as a signal there
// would.
TEST(CliRanker, AStopInTheStageKeepsTheMlpAndAResumeFitsTheRanker) {
  RankerData d;
  const std::string dir = d.dir.File("ckpt"), stopped_model = d.dir.File("stopped.xmlt"),
                    metrics = d.dir.File("m.jsonl"), whole_model = d.dir.File("whole.xmlt");
  const std::vector<std::string> flags = {"--train", d.train, "--test", d.test, "--hidden", "16", "--epochs", "1",
                                          "--eval-every", "end", "--checkpoint-dir", dir};
  for (const bool checkpointed : {true, false}) {
    std::vector<std::string> args(flags.begin(), flags.end() - (checkpointed ? 0 : 2));
    args.insert(args.end(), {"--model", stopped_model, "--metrics", metrics});
    TrainArguments arguments(args);
    TrainSession session;
    session.on_eval = [&](const run::EvalRecord&) { session.stop->Request(SIGTERM); };
    ::testing::internal::CaptureStdout();
    ::testing::internal::CaptureStderr();
    const int code = RunTrain(arguments.flags(), session);
    ::testing::internal::GetCapturedStdout();
    const std::string err = ::testing::internal::GetCapturedStderr();
    EXPECT_EQ(code, 128 + SIGTERM) << err;
    EXPECT_EQ(session.stopped_by_signal, SIGTERM);
    EXPECT_NE(err.find("stopped by signal 15 in the ranker stage"), std::string::npos) << err;
    EXPECT_EQ(err.find("ranker: "), std::string::npos) << "the stage ran on: " << err;
    ASSERT_EQ(FileVersion(stopped_model), 1u) << "the trained MLP alone";
    EXPECT_EQ(engine::LoadModel(stopped_model).ranker, nullptr);
    EXPECT_TRUE(std::filesystem::exists(metrics)) << "training ended: its metrics are whole";
    EXPECT_NE(err.find(checkpointed ? "resume with --resume " + dir : "no --checkpoint-dir"), std::string::npos) << err;
  }
  // The checkpoint holds the trained MLP: a resume fits the ranker, as a run never stopped does.
  std::vector<std::string> resume = {"train"};
  resume.insert(resume.end(), flags.begin(), flags.end());
  std::vector<std::string> whole = resume;
  resume.insert(resume.end(), {"--model", stopped_model, "--resume", dir});
  const CliResult resumed = Cli(resume);
  ASSERT_EQ(resumed.code, 0) << Describe(resumed);
  EXPECT_NE(resumed.err.find("ranker: "), std::string::npos) << resumed.err;
  whole.back() = d.dir.File("ckpt-whole");  // --checkpoint-dir
  whole.insert(whole.end(), {"--model", whole_model});
  ASSERT_EQ(Cli(whole).code, 0);
  EXPECT_EQ(FileVersion(whole_model), 2u);
  EXPECT_EQ(xmlt::testing::ReadFile(stopped_model), xmlt::testing::ReadFile(whole_model));
}

// The same for a blend chosen by folds (under about 1,000 rows): the folds' trainings are part of
// the stage, and a stop there keeps the trained MLP; the resume chooses again, the same way.
TEST(CliRanker, AStopInTheFoldsKeepsTheMlpAndAResumeEndsAsARunNeverStopped) {
  Data d;  // 300 rows
  const std::string dir = d.dir.File("ckpt"), stopped_model = d.dir.File("stopped.xmlt"),
                    whole_model = d.dir.File("whole.xmlt");
  std::vector<std::string> args = TrainArgs(d, {"--eval-every", "end", "--checkpoint-dir", dir});
  args.erase(args.begin());  // "train": TrainArguments takes the flags
  std::vector<std::string> stopped_args = args;
  stopped_args.insert(stopped_args.end(), {"--model", stopped_model});
  TrainArguments arguments(stopped_args);
  TrainSession session;
  session.on_eval = [&](const run::EvalRecord&) { session.stop->Request(SIGTERM); };
  ::testing::internal::CaptureStdout();
  ::testing::internal::CaptureStderr();
  const int code = RunTrain(arguments.flags(), session);
  ::testing::internal::GetCapturedStdout();
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(code, 128 + SIGTERM) << err;
  EXPECT_NE(err.find("its blend is chosen by 3 folds"), std::string::npos) << err;
  EXPECT_NE(err.find("stopped by signal 15 in the ranker stage"), std::string::npos) << err;
  EXPECT_EQ(err.find("chosen by 3 folds of the training rows"), std::string::npos) << "the stage ran on: " << err;
  ASSERT_EQ(FileVersion(stopped_model), 1u) << "the trained MLP alone";

  std::vector<std::string> resume = {"train"};
  resume.insert(resume.end(), args.begin(), args.end());
  std::vector<std::string> whole = resume;
  resume.insert(resume.end(), {"--model", stopped_model, "--resume", dir});
  const CliResult resumed = Cli(resume);
  ASSERT_EQ(resumed.code, 0) << Describe(resumed);
  EXPECT_NE(resumed.err.find("chosen by 3 folds of the training rows"), std::string::npos) << resumed.err;
  *std::find(whole.begin(), whole.end(), dir) = d.dir.File("ckpt-whole");
  whole.insert(whole.end(), {"--model", whole_model});
  ASSERT_EQ(Cli(whole).code, 0);
  EXPECT_EQ(FileVersion(whole_model), 2u) << "the folds chose a ranker on these rows";
  EXPECT_EQ(xmlt::testing::ReadFile(stopped_model), xmlt::testing::ReadFile(whole_model));
}

TEST(CliRanker, OffTrainsTheMlpAloneOnEveryRow) {
  RankerData d;
  const std::string model = d.dir.File("m.model");
  const CliResult r = Cli(d.Args({"--model", model, "--ranker", "off"}));
  ASSERT_EQ(r.code, 0) << Describe(r);
  const json summary = LastJsonLine(r);
  EXPECT_FALSE(summary["ranker"]["fitted"].get<bool>());
  EXPECT_EQ(summary["train_samples"].get<uint64_t>(), 1500u);
  EXPECT_EQ(FileVersion(model), 1u);
  // The paper's preset trains the paper's MLP: no ranker unless asked for.
  const CliResult paper = Cli(d.Args({"--algo", "adaptive", "--devices", "cpu:2", "--preset", "paper"}));
  ASSERT_EQ(paper.code, 0) << Describe(paper);
  EXPECT_FALSE(LastJsonLine(paper)["ranker"]["fitted"].get<bool>());
}

TEST(CliRanker, TooFewRowsToHoldOutChooseTheBlendByFoldsAndTrainOnEveryRow) {
  Data d;  // 300 rows: 30 held out would be too few
  const CliResult r = Cli(TrainArgs(d, {}));
  ASSERT_EQ(r.code, 0) << Describe(r);
  const json summary = LastJsonLine(r);
  EXPECT_TRUE(summary["ranker"]["fitted"].get<bool>()) << summary.dump();
  EXPECT_EQ(summary["ranker"]["blend_folds"].get<uint32_t>(), 3u);
  EXPECT_EQ(summary["ranker"]["holdout_rows"].get<uint64_t>(), 0u);
  EXPECT_EQ(summary["ranker"]["trials"].size(), 21u);
  EXPECT_NE(r.err.find("its blend is chosen by 3 folds (the MLP and the ranker trained"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("chosen by 3 folds of the training rows"), std::string::npos) << r.err;
  // Nothing held out: the MLP trains on every labelled row.
  EXPECT_EQ(summary["train_samples"].get<uint64_t>(), uint64_t(2 * Data::kLabeledTrainRows));
}

TEST(CliRanker, TooFewRowsForFoldsTrainNoRankerAndSaySo) {
  xmlt::testing::TempDir dir;
  const std::string train = dir.File("train.txt");
  xmlt::testing::WriteFile(train, MakeText(25, 1));
  const CliResult r = Cli({"train", "--train", train, "--hidden", "16", "--epochs", "1"});
  ASSERT_EQ(r.code, 0) << Describe(r);
  EXPECT_FALSE(LastJsonLine(r)["ranker"]["fitted"].get<bool>());
  EXPECT_NE(r.err.find("no ranker: 25 training rows are fewer than the 30 its blend is chosen on"), std::string::npos)
      << r.err;
}

// Issue 61, point 2: the memory plan left the ranker out, so a run sized by it could be killed
// after training. A ranker whose stage would not fit the host memory is left out before
// training, said, and no row is held out for it; the plan then counts no ranker.
TEST(CliRanker, ARankerThatDoesNotFitTheMemoryIsLeftOutBeforeTraining) {
  xmlt::testing::TempDir dir;
  // Pair-heavy rows: 200 features and 40 labels a row, 2.5 M pairs (a stage of 76 MiB).
  ASSERT_EQ(Cli({"gen", "--rows", "1200", "--test-rows", "50", "--features", "5000", "--labels", "2000", "--nnz",
                 "200", "--labels-per-row", "40", "--out", dir.path()})
                .code,
            0);
  const std::vector<std::string> args = {"train", "--train", dir.File("train.txt"), "--hidden", "16", "--epochs",
                                         "0.2"};
  ASSERT_EQ(setenv("XMLT_MEMORY_LIMIT", "64M", 1), 0);
  const CliResult r = Cli(args);
  ASSERT_EQ(setenv("XMLT_MEMORY_LIMIT", "64x", 1), 0);
  const CliResult bad = Cli(args);
  unsetenv("XMLT_MEMORY_LIMIT");
  ASSERT_EQ(r.code, 0) << Describe(r);
  const size_t said = r.err.find("warning: no ranker: its stage after training would need ");
  ASSERT_NE(said, std::string::npos) << r.err;
  EXPECT_NE(r.err.find("64 MiB are available (XMLT_MEMORY_LIMIT); decided before training"), std::string::npos)
      << r.err;
  EXPECT_LT(said, r.err.find("model 5000-16-2000")) << "said before training: " << r.err;
  EXPECT_NE(r.err.find("1200 training rows"), std::string::npos) << "no row held out: " << r.err;
  const json summary = LastJsonLine(r);
  EXPECT_FALSE(summary["ranker"]["fitted"].get<bool>());
  EXPECT_EQ(bad.code, 2) << Describe(bad);
  EXPECT_NE(bad.err.find("XMLT_MEMORY_LIMIT must be a number of bytes"), std::string::npos) << Describe(bad);
}

TEST(CliRanker, BadRankerFlagsAreUsageErrorsBeforeLoading) {
  RankerData d;
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"--ranker", "on"}, "--ranker must be auto or off, not 'on'"},
      {{"--ranker-blend", "1.5"}, "--ranker-blend must be 'auto' or a number in [0, 1], not '1.5'"},
      {{"--ranker-blend", "half"}, "--ranker-blend must be 'auto' or a number in [0, 1]"},
      {{"--ranker-shortlist", "4"}, "--ranker-shortlist must be 5 to 1000, not 4"},
      {{"--ranker-shortlist", "1001"}, "--ranker-shortlist must be 5 to 1000"},
      {{"--ranker-holdout", "0.6"}, "--ranker-holdout must be in (0, 0.5]"},
      {{"--ranker-holdout", "0"}, "--ranker-holdout must be in (0, 0.5]"},
      {{"--ranker-passes", "0"}, "--ranker-passes must be 1 or more"},
      {{"--ranker", "off", "--ranker-passes", "2"}, "need --ranker auto"},
      {{"--ranker-blend", "0.5", "--ranker-holdout", "0.2"}, "a fixed blend holds no rows out"},
  };
  for (const auto& [flags, message] : cases) {
    std::vector<std::string> args = {"train", "--train", d.dir.File("absent.txt")};
    args.insert(args.end(), flags.begin(), flags.end());
    const CliResult r = Cli(args);
    EXPECT_EQ(r.code, 2) << Describe(r);
    EXPECT_NE(r.err.find(message), std::string::npos) << r.err;
  }
}

}  // namespace
}  // namespace xmlt::apps
