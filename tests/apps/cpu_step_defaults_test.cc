// The defaults that depend on the data's shape and on the devices: --hidden auto, dropout 0.5,
// the first layer's Adagrad on every device's step (CPU dense, SLIDE's sampled, GPU), --math auto,
// and their refusals.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "apps/train_settings.h"
#include "engine/device_spec.h"
#include "kernels/cpu/bf16_gemm.h"
#include "kernels/output_math.h"
#include "tests/apps/cli_runner.h"
#include "tests/apps/cli_test_support.h"

namespace xmlt::apps {
namespace {

using testing::Cli;
using testing::CliResult;
using testing::Data;
using testing::Describe;
using testing::LastJsonLine;

TEST(CpuStepDefaults, HiddenWidthFollowsTheDataShape) {
  EXPECT_EQ(DefaultHidden(1836, 159), 1024u);        // Bibtex
  EXPECT_EQ(DefaultHidden(500, 983), 512u);          // Delicious: no wider than its 500 features
  EXPECT_EQ(DefaultHidden(80327, 4108), 1024u);      // EURLEX57K
  EXPECT_EQ(DefaultHidden(135909, 670091), 128u);    // Amazon-670K: the parameter bound
  EXPECT_EQ(DefaultHidden(782585, 205443), 128u);    // Delicious-200K
  EXPECT_EQ(DefaultHidden(300000, 150000), 256u);    // between: 450,000 x 256 < 2^27 < x 512
  EXPECT_EQ(DefaultHidden(40, 6), 128u);             // never below 128
}

// What the run says it trains with, from its stderr "step:" line and its summary.
struct Planned {
  std::string shape, step;
};

Planned TrainAndRead(const Data& d, std::vector<std::string> extra) {
  std::vector<std::string> args = {"train", "--train", d.train, "--test", d.test, "--epochs", "1", "--batch", "32"};
  args.insert(args.end(), extra.begin(), extra.end());
  const CliResult r = Cli(args);
  EXPECT_EQ(r.code, 0) << Describe(r);
  Planned s;
  s.shape = LastJsonLine(r).value("model_shape", "");
  const size_t at = r.err.find("step: ");
  if (at != std::string::npos) s.step = r.err.substr(at, r.err.find('\n', at) - at);
  return s;
}

TEST(CpuStepDefaults, CpuDenseRunsTakeAdagradAndDropoutUnlessTold) {
  Data d;
  const Planned plain = TrainAndRead(d, {});
  EXPECT_EQ(plain.shape, "40-128-6");
  EXPECT_NE(plain.step.find("first layer Adagrad at 0.1"), std::string::npos) << plain.step;
  EXPECT_NE(plain.step.find("dropout 0.5"), std::string::npos) << plain.step;
  EXPECT_NE(plain.step.find("(cosine)"), std::string::npos) << plain.step;
  const Planned told = TrainAndRead(d, {"--input-optimizer", "sgd", "--dropout", "0", "--hidden", "16"});
  EXPECT_EQ(told.shape, "40-16-6");
  EXPECT_NE(told.step.find("first layer the same"), std::string::npos) << told.step;
  EXPECT_NE(told.step.find("dropout 0;"), std::string::npos) << told.step;
  // Several CPU devices take it too, at the same rate: lr is scaled with the device count
  // (adaptive's linear scaling: 0.6 on 2 devices), Adagrad's per-coordinate steps are not.
  const Planned two = TrainAndRead(d, {"--algo", "adaptive", "--devices", "cpu:2"});
  EXPECT_NE(two.step.find("SGD at lr 0.6"), std::string::npos) << two.step;
  EXPECT_NE(two.step.find("first layer Adagrad at 0.1"), std::string::npos) << two.step;
  // Sync and Adasum merge under a global momentum of 0.9, which amplifies each merged step 10x:
  // Adagrad takes a tenth of its rate there.
  for (const char* algo : {"sync", "adasum"}) {
    const Planned damped = TrainAndRead(d, {"--algo", algo, "--devices", "cpu:2"});
    EXPECT_NE(damped.step.find("first layer Adagrad at 0.01"), std::string::npos) << algo << ": " << damped.step;
    EXPECT_NE(damped.step.find("dropout 0.5;"), std::string::npos) << algo << ": " << damped.step;
  }
  // Elastic and crossbow keep no global momentum: the full rate. (With the runs above, every
  // algorithm trains here with the default step; the sanitizer builds lean on that.)
  for (const char* algo : {"elastic", "crossbow"}) {
    const Planned full = TrainAndRead(d, {"--algo", algo, "--devices", "cpu:3"});
    EXPECT_NE(full.step.find("first layer Adagrad at 0.1"), std::string::npos) << algo << ": " << full.step;
    EXPECT_NE(full.step.find("dropout 0.5;"), std::string::npos) << algo << ": " << full.step;
  }
  // SLIDE's sampled step takes both too, on one device and as the CPU devices of a larger run.
  const Planned slide = TrainAndRead(d, {"--algo", "slide"});
  EXPECT_NE(slide.step.find("first layer Adagrad at 0.1"), std::string::npos) << slide.step;
  EXPECT_NE(slide.step.find("dropout 0.5;"), std::string::npos) << slide.step;
  const Planned sampled = TrainAndRead(d, {"--algo", "adaptive", "--devices", "cpu:2", "--cpu-output", "sampled"});
  EXPECT_NE(sampled.step.find("first layer Adagrad at 0.1"), std::string::npos) << sampled.step;
  EXPECT_NE(sampled.step.find("dropout 0.5;"), std::string::npos) << sampled.step;
}

// --math auto: bf16 only where every device is a CPU with native bf16 and the step is dense; the
// run's step line names what it took.
TEST(CpuStepDefaults, OutputMathAutoIsBf16OnlyOnCpuOnlyDenseRuns) {
  const bool native = kernels::cpu::Bf16Available(nullptr);
  const kernels::OutputMath cpu_choice = native ? kernels::OutputMath::kBf16 : kernels::OutputMath::kFp32;
  EXPECT_EQ(ParseOutputMath("auto", engine::ParseDeviceList("cpu:1"), false), cpu_choice);
  EXPECT_EQ(ParseOutputMath("auto", engine::ParseDeviceList("cpu:3"), false), cpu_choice);
  EXPECT_EQ(ParseOutputMath("auto", engine::ParseDeviceList("cpu:2"), true), kernels::OutputMath::kFp32);
  EXPECT_EQ(ParseOutputMath("auto", engine::ParseDeviceList("cuda:0"), false), kernels::OutputMath::kFp32);
  EXPECT_EQ(ParseOutputMath("auto", engine::ParseDeviceList("cuda:0,cpu:1"), false), kernels::OutputMath::kFp32);
  EXPECT_EQ(ParseOutputMath("fp32", engine::ParseDeviceList("cpu:1"), false), kernels::OutputMath::kFp32);
  Data d;
  const Planned plain = TrainAndRead(d, {});
  EXPECT_NE(plain.step.find(native ? "output products in bf16" : "output products in fp32"), std::string::npos)
      << plain.step;
  const Planned slide = TrainAndRead(d, {"--algo", "slide"});
  EXPECT_NE(slide.step.find("output products in fp32"), std::string::npos) << slide.step;
  const Planned told = TrainAndRead(d, {"--math", "fp32"});
  EXPECT_NE(told.step.find("output products in fp32"), std::string::npos) << told.step;
}

// --optimizer-state auto: bf16 where the output products are, and said on the step line; fp32
// when told, and refused as bf16 without bf16 products, for a run without a dense CPU step, or
// spelled otherwise. A resume with auto keeps the checkpoint's state (the flags' resume tests).
TEST(CpuStepDefaults, OptimizerStateAutoIsBf16WhereTheProductsAre) {
  const bool native = kernels::cpu::Bf16Available(nullptr);
  Data d;
  const Planned plain = TrainAndRead(d, {});
  EXPECT_EQ(plain.step.find("optimizer state in bf16") != std::string::npos, native) << plain.step;
  const Planned fp32_math = TrainAndRead(d, {"--math", "fp32"});
  EXPECT_EQ(fp32_math.step.find("optimizer state in bf16"), std::string::npos) << fp32_math.step;
  const Planned slide = TrainAndRead(d, {"--algo", "slide"});
  EXPECT_EQ(slide.step.find("optimizer state in bf16"), std::string::npos) << slide.step;
  if (native) {
    const Planned told = TrainAndRead(d, {"--optimizer-state", "fp32"});
    EXPECT_EQ(told.step.find("optimizer state in bf16"), std::string::npos) << told.step;
    const Planned four = TrainAndRead(d, {"--algo", "adaptive", "--devices", "cpu:4", "--optimizer-state", "bf16"});
    EXPECT_NE(four.step.find("optimizer state in bf16"), std::string::npos) << four.step;
  }
  const std::vector<std::string> base = {"train", "--train", d.train, "--test", d.test, "--epochs", "1"};
  const auto refused = [&](std::vector<std::string> extra, const std::string& why) {
    std::vector<std::string> args = base;
    args.insert(args.end(), extra.begin(), extra.end());
    const CliResult r = Cli(args);
    EXPECT_EQ(r.code, 2) << Describe(r);
    EXPECT_NE(r.err.find(why), std::string::npos) << Describe(r);
  };
  refused({"--optimizer-state", "fp16"}, "--optimizer-state must be auto, fp32 or bf16, not 'fp16'");
  refused({"--optimizer-state", "bf16", "--math", "fp32"}, "--optimizer-state bf16 needs the output layer's products in bf16");
  refused({"--optimizer-state", "bf16", "--algo", "slide"}, "--optimizer-state bf16 is for the dense step, on CPUs or GPUs");
}

// --weights auto: bf16 where the output products are and the run's devices are CPUs of the dense
// step on one machine, whatever the merge (the default, --algo single, included), said on the step
// line; fp32 when told and with fp32 math. bf16 is refused for the sampled step, fp32 products, or
// spelled otherwise.
TEST(CpuStepDefaults, WeightsAutoAreBf16OnCpuDevicesWhereTheProductsAre) {
  const bool native = kernels::cpu::Bf16Available(nullptr);
  Data d;
  const Planned plain = TrainAndRead(d, {});
  EXPECT_EQ(plain.step.find("weights in bf16") != std::string::npos, native) << plain.step;
  const Planned fp32_math = TrainAndRead(d, {"--math", "fp32"});
  EXPECT_EQ(fp32_math.step.find("weights in bf16"), std::string::npos) << fp32_math.step;
  if (native) {
    const Planned told = TrainAndRead(d, {"--weights", "fp32"});
    EXPECT_EQ(told.step.find("weights in bf16"), std::string::npos) << told.step;
    // Several CPU devices keep bf16 replicas too, whatever their merge.
    for (const std::string algo : {"adaptive", "elastic", "sync", "crossbow", "adasum"}) {
      const Planned three = TrainAndRead(d, {"--algo", algo, "--devices", "cpu:3"});
      EXPECT_NE(three.step.find("weights in bf16"), std::string::npos) << algo << ": " << three.step;
    }
  }
  const std::vector<std::string> base = {"train", "--train", d.train, "--test", d.test, "--epochs", "1"};
  const auto refused = [&](std::vector<std::string> extra, const std::string& why) {
    std::vector<std::string> args = base;
    args.insert(args.end(), extra.begin(), extra.end());
    const CliResult r = Cli(args);
    EXPECT_EQ(r.code, 2) << Describe(r);
    EXPECT_NE(r.err.find(why), std::string::npos) << Describe(r);
  };
  refused({"--weights", "fp16"}, "--weights must be auto, fp32 or bf16, not 'fp16'");
  refused({"--weights", "bf16", "--math", "fp32"}, "--weights bf16 needs the output layer's products in bf16");
  const std::string bf16_devices = "--weights bf16 is for the dense step: the sampled step reads fp32 weights";
  refused({"--weights", "bf16", "--algo", "slide"}, bf16_devices);
  refused({"--weights", "bf16", "--algo", "adaptive", "--devices", "cpu:2", "--cpu-output", "sampled"}, bf16_devices);
}

// With the shortlist ranker (the default), --hidden auto is at most 512 units where the full width
// would pass 2^24 parameters, and a layer it narrowed trains 30 epochs; without the ranker, with
// --hidden or --epochs given, or below that size, nothing changes. The rows declare 20,000
// features (21 M parameters at 1,024 units; at 2,000 features, 2 M: not narrowed).
TEST(CpuStepDefaults, TheRankersMlpIsNarrowerAndTrainsLonger) {
  xmlt::testing::TempDir dir;
  const std::string train = dir.File("train.txt"), test = dir.File("test.txt");
  int declared = 0;
  const auto wide = [&declared](std::string text) {
    const size_t end = text.find('\n');
    std::istringstream head(text.substr(0, end));
    int rows = 0, features = 0, labels = 0;
    head >> rows >> features >> labels;
    return std::to_string(rows) + " " + std::to_string(declared) + " " + std::to_string(labels) + text.substr(end);
  };
  declared = 20000;
  xmlt::testing::WriteFile(train, wide(testing::MakeText(300, 1)));
  xmlt::testing::WriteFile(test, wide(testing::MakeText(100, 2)));
  const auto run = [&](std::vector<std::string> extra) {
    std::vector<std::string> args = {"train", "--train", train, "--test", test, "--batch", "32"};
    args.insert(args.end(), extra.begin(), extra.end());
    const CliResult r = Cli(args);
    EXPECT_EQ(r.code, 0) << Describe(r);
    return LastJsonLine(r);
  };
  const nlohmann::json with_ranker = run({});
  EXPECT_EQ(with_ranker.value("model_shape", ""), "20000-512-" + std::to_string(testing::kLabels));
  EXPECT_NEAR(with_ranker.value("epochs", 0.0), kShortlistMlpEpochs, 1e-6);
  EXPECT_TRUE(with_ranker.contains("ranker")) << with_ranker.dump();
  const nlohmann::json without = run({"--ranker", "off", "--epochs", "1"});
  EXPECT_EQ(without.value("model_shape", ""), "20000-1024-" + std::to_string(testing::kLabels));
  const nlohmann::json plain_epochs = run({"--ranker", "off"});
  EXPECT_NEAR(plain_epochs.value("epochs", 0.0), 20.0, 1e-6);
  const nlohmann::json told_epochs = run({"--epochs", "2"});
  EXPECT_EQ(told_epochs.value("model_shape", ""), "20000-512-" + std::to_string(testing::kLabels));
  EXPECT_NEAR(told_epochs.value("epochs", 0.0), 2.0, 1e-6);
  const nlohmann::json told_width = run({"--hidden", "1024", "--epochs", "1"});
  EXPECT_EQ(told_width.value("model_shape", ""), "20000-1024-" + std::to_string(testing::kLabels));
  declared = 2000;  // a small model keeps its full width and epochs with the ranker
  xmlt::testing::WriteFile(train, wide(testing::MakeText(300, 1)));
  xmlt::testing::WriteFile(test, wide(testing::MakeText(100, 2)));
  const nlohmann::json small = run({});
  EXPECT_EQ(small.value("model_shape", ""), "2000-1024-" + std::to_string(testing::kLabels));
  EXPECT_NEAR(small.value("epochs", 0.0), 20.0, 1e-6);
}

TEST(CpuStepDefaults, AdagradWhereItCannotRunIsAUsageError) {
  Data d;
  const std::vector<std::vector<std::string>> bad = {
      {"--input-optimizer", "adam"},
      {"--input-optimizer", "sgd", "--input-lr", "0.2"},
      {"--input-lr", "0"},
      {"--input-lr", "nan"},
  };
  for (const std::vector<std::string>& flags : bad) {
    std::vector<std::string> args = {"train", "--train", d.train, "--test", d.test, "--epochs", "1"};
    args.insert(args.end(), flags.begin(), flags.end());
    const CliResult r = Cli(args);
    std::string joined;
    for (const std::string& f : flags) joined += f + " ";
    EXPECT_EQ(r.code, 2) << joined << "\n" << Describe(r);
    EXPECT_NE(r.err.find("--input-"), std::string::npos) << joined << "\n" << r.err;
  }
}

}  // namespace
}  // namespace xmlt::apps
