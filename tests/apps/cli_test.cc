// Tests of the xmltrain command line through RunCli: exit codes and messages for good and bad
// usage, and the train -> eval round trip. predict and the data commands (gen, info, convert) are
// cli_predict_and_data_test.cc's; the train command's options cli_train_options_test.cc's, its
// refusals before the work cli_refusals_test.cc's and cli_output_refusals_test.cc's, resuming
// cli_resume_test.cc's.
#include "apps/cli.h"
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
#include "kernels/cpu/cpu_isa.h"
#include "run/metrics_log.h"
#include "tests/apps/child_process.h"
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

// Issue: reliability, fifth round, row 15. `xmltrain --help > /dev/full` exited 0 with no help
// written, where data.md promises that a failed stdout write never exits 0.
TEST(CliTest, HelpOnAStdoutThatCannotBeWrittenFailsNamingIt) {
  TempDir dir;
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"--help"}, std::vector<std::string>{"train", "--help"}}) {
    const std::string err = dir.File("err.txt");
    const int code = testing::WaitForExit(testing::SpawnCli(args, "/dev/full", err));
    const std::string text = ReadFile(err);
    EXPECT_EQ(code, 1) << args[0] << ": " << text;
    EXPECT_NE(text.find("error: stdout: write failed: No space left on device"), std::string::npos)
        << args[0] << ": " << text;
  }
}

TEST(CliTest, HelpExitsZeroAndListsCommandsAndDefaults) {
  const CliResult top = Cli({"--help"});
  EXPECT_EQ(top.code, 0) << Describe(top);
  for (const char* command : {"train", "eval", "predict", "gen", "convert", "info", "--config"})
    EXPECT_NE(top.out.find(command), std::string::npos) << command << "\n" << top.out;

  const CliResult train = Cli({"train", "--help"});
  EXPECT_EQ(train.code, 0) << Describe(train);
  for (const char* flag : {"--epochs", "--batch", "--lr", "--local-momentum", "--hidden",
                           "--eval-every", "--normalize", "--metrics", "--model", "--seed"})
    EXPECT_NE(train.out.find(flag), std::string::npos) << flag;
  // Defaults are documented (20 epochs, batch 128, lr 0.3 on a cosine schedule, the hidden layer
  // from the data's shape, the first layer's optimizer by the devices, evaluation each epoch, L2
  // rows; the local momentum's 0.9 and the multi-device knobs by the presets, whose two sets are
  // tabled side by side after the options).
  for (const char* shown :
       {"--epochs FLOAT=20 ", "--batch UINT=128 ", "--lr TEXT=0.3 ", "--lr-schedule TEXT=cosine ",
        "--hidden TEXT=auto ", "--input-optimizer TEXT=auto ", "--input-lr FLOAT=0.1 ",
        "--eval-every TEXT=epoch ", "--normalize TEXT=l2 ", "--preset TEXT=default ",
        "(single: 0.9; several devices: preset)", "paper (section 5.1)", "local-momentum    0.9"})
    EXPECT_NE(train.out.find(shown), std::string::npos) << shown << "\n" << train.out;
}

TEST(CliTest, MissingSubcommandIsAUsageError) {
  const CliResult r = Cli({});
  EXPECT_EQ(r.code, 2) << Describe(r);
  EXPECT_FALSE(r.err.empty());
}

TEST(CliTest, TrainPrintsSummaryAndWritesMetricsAndModel) {
  Data d;
  const std::string metrics = d.dir.File("m.jsonl"), model = d.dir.File("m.model");
  const CliResult r = Cli(TrainArgs(d, {"--metrics", metrics, "--model", model}));
  ASSERT_EQ(r.code, 0) << Describe(r);
  const json summary = LastJsonLine(r);
  ASSERT_TRUE(summary.is_object()) << r.out;
  for (const char* key : {"samples_per_wall_s", "train_time_s", "train_samples", "p1", "mlp_best_p1", "cpu_isa"})
    EXPECT_TRUE(summary.contains(key)) << key << " missing in " << summary.dump();
  // One device trains on the wall clock, and every time says so (issue 62, point 2).
  EXPECT_EQ(summary["clock"], "wall");
  EXPECT_FALSE(summary.contains("samples_per_s")) << "a rate that does not name its clock";
  EXPECT_FALSE(summary.contains("samples_per_virtual_s"));
  EXPECT_NE(r.out.find(" wall s  loss "), std::string::npos) << r.out;
  EXPECT_EQ(summary["train_samples"].get<uint64_t>(), uint64_t(2 * Data::kLabeledTrainRows));
  // The CPU step's vector kernels the run used (XMLT_CPU_ISA, or this CPU's widest).
  EXPECT_EQ(summary["cpu_isa"].get<std::string>(), kernels::cpu::CpuIsaName(kernels::cpu::ActiveCpuIsa()));
  EXPECT_GT(summary["samples_per_wall_s"].get<double>(), 0.0);
  // The MLP's last figures: the top level's, or under "mlp" when the ranker re-scores the model.
  const json mlp = summary.contains("mlp") ? summary["mlp"] : summary;
  EXPECT_GE(summary["mlp_best_p1"].get<double>(), mlp["p1"].get<double>());

  // One metrics line per epoch, the file renamed from .partial.
  EXPECT_FALSE(fs::exists(metrics + ".partial"));
  const std::vector<std::string> lines = Lines(ReadFile(metrics));
  ASSERT_EQ(lines.size(), 2u);
  const json last = json::parse(lines.back());
  EXPECT_EQ(last["p1"].get<double>(), mlp["p1"].get<double>());
  EXPECT_EQ(last["epoch"].get<double>(), 2.0);

  const kernels::Model<float> saved = engine::LoadModel(model).mlp;
  EXPECT_EQ(saved.shape.num_features, uint64_t(kFeatures));
  EXPECT_EQ(saved.shape.num_labels, uint64_t(kLabels));
  EXPECT_EQ(saved.shape.hidden, std::vector<uint32_t>{16});
  EXPECT_TRUE(saved.shape.normalize_rows);
}

// Issue: reliability, fifth round, row 13. With the shortlist ranker the summary's best_p1 (the
// MLP's best evaluation) sat beside p1 (the final model's, with the ranker): after one Bibtex epoch
// 0.5797 against 0.6330, read as the best and the final figure of one model. The MLP's are named
// so, p1.. stay the final model's.
TEST(CliTest, TheSummaryNamesTheMlpsBestApartFromTheFinalModel) {
  Data d;
  const CliResult r = Cli(TrainArgs(d, {"--ranker-blend", "0.5", "--eval-every", "1", "--mega-batch", "2"}));
  ASSERT_EQ(r.code, 0) << Describe(r);
  const json summary = LastJsonLine(r);
  ASSERT_TRUE(summary.contains("mlp")) << "no ranker was trained: " << summary.dump();
  for (const char* old_name : {"best_p1", "best_epoch"}) EXPECT_FALSE(summary.contains(old_name)) << summary.dump();
  ASSERT_TRUE(summary.contains("mlp_best_p1") && summary.contains("mlp_best_epoch")) << summary.dump();
  // The best is among the MLP's evaluations, the last of which is "mlp".
  EXPECT_GE(summary["mlp_best_p1"].get<double>(), summary["mlp"]["p1"].get<double>()) << summary.dump();
  EXPECT_GT(summary["mlp_best_epoch"].get<double>(), 0.0) << summary.dump();
}

TEST(CliTest, EvalOfTheSavedModelReproducesTheSummary) {
  Data d;
  for (const std::string normalize : {"l2", "none"}) {
    SCOPED_TRACE("--normalize " + normalize);
    const std::string model = d.dir.File("model-" + normalize);
    const CliResult train = Cli(TrainArgs(d, {"--model", model, "--normalize", normalize}));
    ASSERT_EQ(train.code, 0) << Describe(train);
    const json summary = LastJsonLine(train);
    EXPECT_EQ(engine::LoadModel(model).mlp.shape.normalize_rows, normalize == "l2");

    const CliResult eval = Cli({"eval", "--model", model, "--test", d.test});
    ASSERT_EQ(eval.code, 0) << Describe(eval);
    const json result = LastJsonLine(eval);
    ASSERT_TRUE(result.is_object()) << eval.out;
    EXPECT_EQ(result["rows"].get<uint64_t>(), uint64_t(Data::kTestRows));
    EXPECT_DOUBLE_EQ(result["p1"].get<double>(), summary["p1"].get<double>());
    EXPECT_DOUBLE_EQ(result["p5"].get<double>(), summary["p5"].get<double>());
    EXPECT_NEAR(result["loss"].get<double>(), summary["loss"].get<double>(), 1e-9);
  }
}

TEST(CliTest, MalformedDataFileReportsFileAndLine) {
  TempDir dir;
  const std::string path = dir.File("bad.txt");
  WriteFile(path, "3 10 4\n0 1:1 2:0.5\n1 abc:1\n2 3:1\n");  // line 3: a non-numeric feature id
  const CliResult r = Cli({"train", "--train", path, "--epochs", "1"});
  EXPECT_EQ(r.code, 2) << Describe(r);
  EXPECT_NE(r.err.find(path + ":3: "), std::string::npos) << r.err;

  const CliResult info = Cli({"info", path});
  EXPECT_EQ(info.code, 2) << Describe(info);
  EXPECT_NE(info.err.find(path + ":3: "), std::string::npos) << info.err;
}

TEST(CliTest, MissingDataFileIsBadInputNamingIt) {
  TempDir dir;
  const std::string path = dir.File("absent.txt");
  const CliResult r = Cli({"train", "--train", path});
  EXPECT_EQ(r.code, 2) << Describe(r);
  EXPECT_NE(r.err.find(path), std::string::npos) << r.err;
  const CliResult info = Cli({"info", path});
  EXPECT_EQ(info.code, 2) << Describe(info);
}

TEST(CliTest, BadFlagValuesAreUsageErrors) {
  Data d;
  // Each case with a fragment of the message it must give, so that it fails for its own reason.
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"--hidden", "0"}, "--hidden"},
      {{"--hidden", "16,x"}, "'x'"},
      {{"--hidden", ""}, "--hidden"},
      {{"--eval-every", "foo"}, "--eval-every"},
      {{"--eval-every", "-1"}, "--eval-every"},
      {{"--normalize", "bad"}, "--normalize"},
      {{"--format", "bad"}, "--format"},
      {{"--epochs", "abc"}, "--epochs"},
      {{"--epochs", "0"}, "--epochs"},
      {{"--epochs", "-1"}, "--epochs"},
      {{"--batch", "0"}, "--batch"},
      {{"--batch", "-5"}, "--batch"},
      {{"--lr", "0"}, "--lr"},
      {{"--lr", "-0.1"}, "--lr"},
      {{"--local-momentum", "1.5"}, "momentum"},
      {{"--local-momentum", "-1"}, "momentum"},
      {{"--mega-batch", "0"}, "--mega-batch"},
      {{"--no-such-option"}, "--no-such-option"},
  };
  for (const auto& [extra, fragment] : cases) {
    std::string joined;
    for (const auto& e : extra) joined += e + " ";
    SCOPED_TRACE(joined);
    const CliResult r = Cli(TrainArgs(d, extra));
    EXPECT_EQ(r.code, 2) << Describe(r);
    EXPECT_NE(r.err.find(fragment), std::string::npos) << r.err;
  }
  const CliResult threads = Cli({"--threads", "-1", "info", d.train});
  EXPECT_EQ(threads.code, 2) << Describe(threads);
  const CliResult unknown_command = Cli({"fly"});
  EXPECT_EQ(unknown_command.code, 2) << Describe(unknown_command);
}

// Regression: `--local-momentum nan` once trained silently without momentum and exited 0.
TEST(CliTest, NanMomentumIsAUsageError) {
  Data d;
  const CliResult r = Cli(TrainArgs(d, {"--local-momentum", "nan"}));
  EXPECT_EQ(r.code, 2) << Describe(r);
}

TEST(CliTest, CorruptModelIsBadInputInEvalAndPredict) {
  Data d;
  const std::string model = d.dir.File("m.model");
  ASSERT_EQ(Cli(TrainArgs(d, {"--model", model, "--epochs", "1"})).code, 0);
  std::string bytes = ReadFile(model);
  bytes[bytes.size() / 2] = char(bytes[bytes.size() / 2] ^ 0x01);
  WriteFile(model, bytes);
  const CliResult eval = Cli({"eval", "--model", model, "--test", d.test});
  EXPECT_EQ(eval.code, 2) << Describe(eval);
  EXPECT_NE(eval.err.find(model), std::string::npos) << eval.err;
  EXPECT_NE(eval.err.find("checksum"), std::string::npos) << eval.err;

  const CliResult predict = Cli({"predict", "--model", model, "--input", d.test});
  EXPECT_EQ(predict.code, 2) << Describe(predict);
  EXPECT_NE(predict.err.find(model), std::string::npos) << predict.err;

  // A data file given as the model.
  const CliResult foreign = Cli({"eval", "--model", d.train, "--test", d.test});
  EXPECT_EQ(foreign.code, 2) << Describe(foreign);
  EXPECT_NE(foreign.err.find(d.train), std::string::npos) << foreign.err;
  const CliResult absent = Cli({"eval", "--model", d.dir.File("absent.model"), "--test", d.test});
  EXPECT_EQ(absent.code, 2) << Describe(absent);
}

// Issue: reliability, fourth round, row 7. A test row labelled 300, or with feature id 5000,
// widened the model (1836-128-159 became 1836-128-301) and so changed training. The training data
// alone sets the shape; the test's extra ids are left out of its scores, with warnings, as eval
// leaves them out.
TEST(CliTest, TheTestFileDoesNotChangeTheModel) {
  testing::Data d;
  const std::vector<std::string> rows = testing::Lines(ReadFile(d.test));
  std::string wider = std::to_string(testing::Data::kTestRows + 1) + " 5000 301\n";
  for (size_t r = 1; r < rows.size(); ++r) wider += rows[r] + "\n";
  wider += "300 4999:1 3:1\n";
  const std::string wide = d.dir.File("wide-test.txt");
  WriteFile(wide, wider);
  const std::string plain_model = d.dir.File("plain.xmlt"), wide_model = d.dir.File("wide.xmlt");
  const testing::CliResult plain = testing::Cli(testing::TrainArgs(d, {"--model", plain_model}));
  ASSERT_EQ(plain.code, 0) << testing::Describe(plain);
  std::vector<std::string> args = testing::TrainArgs(d, {"--model", wide_model});
  std::replace(args.begin(), args.end(), d.test, wide);
  const testing::CliResult widened = testing::Cli(args);
  ASSERT_EQ(widened.code, 0) << testing::Describe(widened);
  EXPECT_EQ(testing::LastJsonLine(widened)["model_shape"], testing::LastJsonLine(plain)["model_shape"]);
  EXPECT_EQ(ReadFile(wide_model), ReadFile(plain_model)) << "the test file changed the trained model";
  EXPECT_NE(widened.err.find("warning: " + wide + " has 1 feature entries (in 1 rows) with ids beyond the model's"),
            std::string::npos)
      << widened.err;
  EXPECT_NE(widened.err.find("warning: " + wide + " has 301 labels, the model 6"), std::string::npos) << widened.err;
}

// Issue: reliability, fourth round, row 15. The virtual clock measured its row cost on each run's
// own first mega-batch: identical runs reported 10.7, 5.1 and 4.6 virtual seconds on a busy
// machine, and adaptive against elastic compared two clocks. By default the costs now come from
// the model's shape and the data (virtual_clock_costs.h); measuring is asked for by name.
TEST(CliTest, TheVirtualClockChargesEveryRunAlike) {
  testing::Data d;
  const auto run = [&](const std::string& algo, std::vector<std::string> extra) {
    std::vector<std::string> args =
        testing::TrainArgs(d, {"--algo", algo, "--devices", "cpu:3", "--speed", "1,1.2,1.5", "--threads", "1"});
    args.insert(args.end(), extra.begin(), extra.end());
    const testing::CliResult r = testing::Cli(args);
    EXPECT_EQ(r.code, 0) << testing::Describe(r);
    // Virtual seconds are said to be virtual (issue 62, point 2): "train 0.20 virtual s".
    EXPECT_NE(r.out.find(" virtual s  loss "), std::string::npos) << r.out;
    return testing::LastJsonLine(r);
  };
  const nlohmann::json first = run("adaptive", {}), second = run("adaptive", {});
  EXPECT_EQ(first["train_time_s"], second["train_time_s"]) << "two identical runs, two virtual times";
  EXPECT_EQ(first["clock"], "virtual");
  EXPECT_DOUBLE_EQ(first["samples_per_virtual_s"].get<double>(),
                   first["train_samples"].get<double>() / first["train_time_s"].get<double>());
  EXPECT_GT(first["samples_per_wall_s"].get<double>(), 0.0);
  EXPECT_EQ(first["virtual_clock"]["costs"], "model");
  const nlohmann::json elastic = run("elastic", {});
  EXPECT_EQ(elastic["virtual_clock"]["row_cost_s"], first["virtual_clock"]["row_cost_s"]);
  EXPECT_EQ(elastic["virtual_clock"]["merge_cost_s"], first["virtual_clock"]["merge_cost_s"]);
  EXPECT_GT(first["virtual_clock"]["row_cost_s"].get<double>(), 0.0);
  const nlohmann::json measured = run("adaptive", {"--clock-costs", "measured"});
  EXPECT_EQ(measured["virtual_clock"]["costs"], "measured");
  EXPECT_NE(measured["virtual_clock"]["row_cost_s"], first["virtual_clock"]["row_cost_s"]);
  const nlohmann::json given = run("adaptive", {"--row-cost", "1e-6", "--merge-cost", "1e-9"});
  EXPECT_EQ(given["virtual_clock"]["costs"], "given");
  EXPECT_EQ(given["virtual_clock"]["row_cost_s"], 1e-6);
}

}  // namespace
}  // namespace xmlt::apps
