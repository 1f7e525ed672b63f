// Every flag of `train` is either refused when a resume changes it, with a message naming that
// flag, or listed in docs/long-runs.md ("What a resume may change") and taken by a resume. The
// test walks the train command's own option list, so a new flag must take a side, and the list
// and the code cannot drift.
#include "apps/cli.h"
#include "tests/apps/cli_runner.h"

#include <CLI/CLI.hpp>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "kernels/cpu/bf16_gemm.h"
#include "tests/apps/cli_test_support.h"
#include "tests/test_support.h"

namespace xmlt::apps {
namespace {

namespace fs = std::filesystem;
using namespace testing;  // the shared pieces of cli_test_support.h and cli_runner.h

// The flags of a run as (flag, value) pairs; a value of "" is a flag without one (--one-based).
using Flags = std::vector<std::pair<std::string, std::string>>;

// `flags` with each of `changes` replacing the flag's value, or added.
Flags Changed(Flags flags, const Flags& changes) {
  for (const auto& [flag, value] : changes) {
    bool found = false;
    for (auto& [f, v] : flags)
      if (f == flag) {
        v = value;
        found = true;
      }
    if (!found) flags.push_back({flag, value});
  }
  return flags;
}

std::vector<std::string> Args(const Flags& flags) {
  std::vector<std::string> args = {"train"};
  for (const auto& [flag, value] : flags) {
    args.push_back(flag);
    if (!value.empty()) args.push_back(value);
  }
  return args;
}

// The rows of MakeText as a split pair, every id one up (so that none is 0, and --one-based reads
// other rows rather than failing): (X text, Y text).
std::pair<std::string, std::string> ShiftedSplitPair(const std::string& text) {
  std::istringstream in(text);
  std::string line;
  std::getline(in, line);  // "N D L"
  std::ostringstream x, y;
  std::vector<std::string> rows;
  while (std::getline(in, line)) rows.push_back(line);
  x << rows.size() << " " << kFeatures + 1 << "\n";
  y << rows.size() << " " << kLabels + 1 << "\n";
  for (const std::string& row : rows) {
    std::istringstream tokens(row);
    std::string labels, token;
    if (row[0] != ' ') tokens >> labels;
    std::istringstream label_ids(labels);
    std::string sep;
    for (std::string id; std::getline(label_ids, id, ',');) {
      y << sep << std::stoi(id) + 1 << ":1";
      sep = " ";
    }
    y << "\n";
    sep.clear();
    while (tokens >> token) {
      const size_t colon = token.find(':');
      x << sep << std::stoi(token.substr(0, colon)) + 1 << token.substr(colon);
      sep = " ";
    }
    x << "\n";
  }
  return {x.str(), y.str()};
}

enum class Base { kSingle, kDevices, kSlide, kPair };

// A checkpointed run of each kind, and other data files for the changes.
struct Bases {
  xmlt::testing::TempDir dir;
  std::string train = dir.File("train.txt"), test = dir.File("test.txt"), other_train = dir.File("other-train.txt"),
              other_test = dir.File("other-test.txt");
  std::string x = dir.File("x.txt"), y = dir.File("y.txt"), test_x = dir.File("test-x.txt"),
              test_y = dir.File("test-y.txt"), other_y = dir.File("other-y.txt"), other_test_y = dir.File("other-test-y.txt");
  std::map<Base, Flags> flags;

  Bases() {
    // 1,500 rows: enough for the ranker's held-out tenth.
    xmlt::testing::WriteFile(train, MakeText(1500, 3));
    xmlt::testing::WriteFile(test, MakeText(200, 4));
    xmlt::testing::WriteFile(other_train, MakeText(1500, 5));
    xmlt::testing::WriteFile(other_test, MakeText(200, 6));
    const auto [train_x, train_y] = ShiftedSplitPair(MakeText(400, 7));
    const auto [x_test, y_test] = ShiftedSplitPair(MakeText(100, 8));
    xmlt::testing::WriteFile(x, train_x);
    xmlt::testing::WriteFile(y, train_y);
    xmlt::testing::WriteFile(test_x, x_test);
    xmlt::testing::WriteFile(test_y, y_test);
    xmlt::testing::WriteFile(other_y, ShiftedSplitPair(MakeText(400, 9)).second);
    xmlt::testing::WriteFile(other_test_y, ShiftedSplitPair(MakeText(100, 10)).second);
    const Flags common = {{"--hidden", "8"}, {"--epochs", "1"}, {"--batch", "64"}};
    flags[Base::kSingle] = Changed({{"--train", train}, {"--test", test}, {"--eval-rows", "50"}}, common);
    // fp32, which CPU devices with SLIDE's sampled output layer also compute in (--cpu-output).
    flags[Base::kDevices] =
        Changed(flags[Base::kSingle], {{"--algo", "adaptive"}, {"--devices", "cpu:2"}, {"--math", "fp32"}});
    flags[Base::kSlide] = Changed({{"--train", train}, {"--test", test}, {"--algo", "slide"}, {"--ranker", "off"}}, common);
    flags[Base::kPair] = Changed({{"--train", x}, {"--train-labels", y}, {"--test", test_x}, {"--test-labels", test_y},
                                  {"--ranker", "off"}},
                                 common);
    for (auto& [base, base_flags] : flags) {
      base_flags.push_back({"--checkpoint-dir", Folder(base)});
      const CliResult r = Cli(Args(base_flags));
      EXPECT_EQ(r.code, 0) << Describe(r);
    }
  }

  std::string Folder(Base base) const { return dir.File("ckpt-" + std::to_string(int(base))); }

  // A resume of `base`'s checkpoint with `changes`; from a copy of it when `copy` names one (a
  // resume that is taken writes its own checkpoint).
  CliResult Resume(Base base, const Flags& changes, const std::string& copy = "") const {
    std::string from = Folder(base);
    if (!copy.empty()) {
      fs::copy(from, copy, fs::copy_options::recursive);
      from = copy;
    }
    Flags resume = Changed(flags.at(base), {{"--checkpoint-dir", from}});
    resume = Changed(resume, changes);
    resume.push_back({"--resume", from});
    return Cli(Args(resume));
  }
};

// A change of a flag that a resume refuses, and what its message must name (the flag itself
// unless given). `strict`: the refusal is the resume's check ("differ from the checkpointed
// run's"); otherwise the change cannot be made on this machine's devices, and any refusal naming
// the flag will do.
struct Refused {
  std::string flag;
  Base base;
  Flags changes;
  bool strict = true;
};

// A change a resume takes (docs/long-runs.md's list); `changes` empty: the flag is taken by every
// resume here (--resume) or cannot be changed alone (below).
struct MayChange {
  std::string flag;
  Base base;
  Flags changes;
};

std::vector<Refused> RefusedChanges(const Bases& b) {
  const Base single = Base::kSingle, devices = Base::kDevices, slide = Base::kSlide, pair = Base::kPair;
  std::string why;
  const bool bf16 = kernels::cpu::Bf16Available(&why);
  return {
      {"--train", single, {{"--train", b.other_train}}},
      {"--train-labels", pair, {{"--train-labels", b.other_y}}},
      {"--test", single, {{"--test", b.other_test}}},
      {"--test-labels", pair, {{"--test-labels", b.other_test_y}}},
      {"--one-based", pair, {{"--one-based", ""}}},
      {"--batch", single, {{"--batch", "32"}}},
      {"--lr-schedule", single, {{"--lr-schedule", "constant"}}},
      {"--input-optimizer", single, {{"--input-optimizer", "sgd"}}},
      {"--input-lr", single, {{"--input-lr", "0.05"}}},
      {"--ranker", single, {{"--ranker", "off"}}},
      {"--ranker-blend", single, {{"--ranker-blend", "0.5"}}},
      {"--ranker-holdout", single, {{"--ranker-holdout", "0.2"}}},
      {"--local-momentum", single, {{"--local-momentum", "0.5"}}},
      {"--weight-decay", single, {{"--weight-decay", "0.001"}}},
      {"--dropout", single, {{"--dropout", "0.25"}}},
      {"--normalize", single, {{"--normalize", "none"}}},
      {"--hidden", single, {{"--hidden", "16"}}},
      {"--mega-batch", single, {{"--mega-batch", "7"}}},
      {"--eval-rows", single, {{"--eval-rows", "60"}}},
      {"--final-eval", single, {{"--final-eval", "sample"}}},
      // --math auto is bf16 where this CPU has it: fp32 then is the change; elsewhere bf16 is, and
      // the CPU refuses it before any resume.
      {"--math", single, {{"--math", bf16 ? "fp32" : "bf16"}}, bf16},
      // --optimizer-state likewise: auto is bf16 where the math is; bf16 is refused without it.
      {"--optimizer-state", single, {{"--optimizer-state", bf16 ? "fp32" : "bf16"}}, bf16},
      // --weights likewise (one CPU device, as here).
      {"--weights", single, {{"--weights", bf16 ? "fp32" : "bf16"}}, bf16},
      {"--propensity", single, {{"--propensity", "0.6,2.6"}}},
      {"--seed", single, {{"--seed", "2"}}},
      {"--divergence-factor", single, {{"--divergence-factor", "50"}}},
      {"--algo", devices, {{"--algo", "elastic"}}},
      {"--cpu-output", devices, {{"--cpu-output", "sampled"}}},
      {"--slide-hash", slide, {{"--slide-hash", "dwta"}}},
      {"--slide-k", slide, {{"--slide-k", "5"}}},
      {"--slide-l", slide, {{"--slide-l", "10"}}},
      {"--slide-bucket", slide, {{"--slide-bucket", "64"}}},
      {"--slide-min-active", slide, {{"--slide-min-active", "3"}}},
      {"--slide-weight-padding", slide, {{"--slide-weight-padding", "false"}}},
      {"--slide-rehash-first", slide, {{"--slide-rehash-first", "7"}}},
      {"--slide-rehash-growth", slide, {{"--slide-rehash-growth", "1.5"}}},
      {"--speed", devices, {{"--speed", "1,1.5"}}},
      {"--hetero", devices, {{"--hetero", "cvb:vmach=0.6,vtask=0.1"}}},
      {"--clock", devices, {{"--clock", "wall"}}},
      {"--clock-costs", devices, {{"--clock-costs", "measured"}}},
      {"--row-cost", devices, {{"--row-cost", "1e-6"}}},
      {"--merge-cost", devices, {{"--merge-cost", "1e-9"}}},
      {"--batch-min", devices, {{"--batch-min", "4"}}},
      {"--beta", devices, {{"--beta", "3"}}},
      {"--preset", devices, {{"--preset", "paper"}}},
      {"--momentum", devices, {{"--momentum", "0.5"}}},
      {"--lr-scaling", devices, {{"--lr-scaling", "none"}}},
      {"--pert-weights", devices, {{"--pert-weights", "raw"}}},
      {"--mega-batch-warmup", devices, {{"--mega-batch-warmup", "off"}}},
      {"--pert-thr", devices, {{"--pert-thr", "0.5"}}},
      {"--pert-delta", devices, {{"--pert-delta", "0.5"}}},
      {"--schedule", devices, {{"--schedule", "static"}}},
      {"--merge", devices, {{"--merge", "average"}}},
      {"--collective", devices, {{"--collective", "tree"}}},
      // The GPUs' merge needs GPUs: refused on CPU devices before any resume.
      {"--merge-on", devices, {{"--merge-on", "gpus"}}, false},
      {"--momentum-mode", devices, {{"--momentum-mode", "nesterov"}}},
      // The elastic force is the average merge's: the adaptive base's normalized merge refuses it.
      {"--elastic-alpha", devices, {{"--merge", "average"}, {"--elastic-alpha", "0.1"}}},
  };
}

std::vector<MayChange> MayChanges(const Bases& b) {
  const Base single = Base::kSingle, devices = Base::kDevices;
  return {
      {"--epochs", single, {{"--epochs", "2"}}},
      {"--eval-every", single, {{"--eval-every", "end"}}},
      {"--lr", single, {{"--lr", "0.1"}}},  // lower than the default 0.3
      {"--devices", devices, {{"--devices", "cpu:3"}}},
      {"--ranker-shortlist", single, {{"--ranker-shortlist", "5"}}},
      {"--ranker-passes", single, {{"--ranker-passes", "2"}}},
      {"--holdout-stop", single, {{"--holdout-stop", "off"}}},
      {"--model", single, {{"--model", b.dir.File("resumed.xmlt")}}},
      {"--metrics", single, {{"--metrics", b.dir.File("resumed.jsonl")}}},
      {"--checkpoint-dir", single, {{"--checkpoint-dir", b.dir.File("elsewhere")}}},
      {"--checkpoint-every", single, {{"--checkpoint-every", "3"}}},
      {"--resume", single, {}},
      {"--max-rollbacks", single, {{"--max-rollbacks", "1"}}},
      {"--rank-timeout", single, {{"--rank-timeout", "60"}}},
      {"--inject-fault", devices, {{"--inject-fault", "device=1,megabatch=1000"}}},
      {"--format", single, {{"--format", "xml"}}},
      {"--no-cache", single, {{"--no-cache", ""}}},
  };
}

// The flags docs/long-runs.md lists under "What a resume may change": its sub-list's items.
std::set<std::string> DocumentedMayChange() {
  const fs::path docs = fs::path(__FILE__).parent_path().parent_path().parent_path() / "docs" / "long-runs.md";
  std::ifstream in(docs);
  EXPECT_TRUE(in.good()) << docs;
  std::set<std::string> flags;
  bool inside = false;
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("- **What a resume may change**", 0) == 0) {
      inside = true;
      continue;
    }
    if (!inside) continue;
    if (line.rfind("  ", 0) != 0) break;  // the next bullet of the page
    if (line.rfind("  - ", 0) != 0 && line.rfind("    ", 0) != 0) continue;  // the paragraph after the list
    for (size_t at = line.find("`--"); at != std::string::npos; at = line.find("`--", at + 1)) {
      const size_t end = line.find('`', at + 1);
      flags.insert(line.substr(at + 1, end - at - 1));
    }
  }
  EXPECT_FALSE(flags.empty()) << "no list under \"What a resume may change\" in " << docs;
  return flags;
}

std::set<std::string> TrainOptionNames() {
  CLI::App app;
  const Command train = AddTrainCommand(&app);
  std::set<std::string> flags;
  for (const CLI::Option* option : train.app->get_options())
    if (option->get_name() != "--help") flags.insert(option->get_name());
  return flags;
}

TEST(CliResumeFlags, EveryTrainFlagIsRefusedByNameOrListedAndTaken) {
  Bases b;
  const std::vector<Refused> refused = RefusedChanges(b);
  const std::vector<MayChange> may_change = MayChanges(b);
  // Every flag on exactly one side.
  std::set<std::string> covered, listed;
  for (const Refused& r : refused) EXPECT_TRUE(covered.insert(r.flag).second) << r.flag << " twice";
  for (const MayChange& m : may_change) {
    EXPECT_TRUE(covered.insert(m.flag).second) << m.flag << " both refused and listed";
    listed.insert(m.flag);
  }
  const std::set<std::string> all = TrainOptionNames();
  for (const std::string& flag : all)
    EXPECT_TRUE(covered.count(flag)) << flag << ": a flag of train that is neither refused on resume nor listed as "
                                     << "one that may change (docs/long-runs.md, and this test)";
  for (const std::string& flag : covered) EXPECT_TRUE(all.count(flag)) << flag << " is not a flag of train";
  EXPECT_EQ(DocumentedMayChange(), listed) << "docs/long-runs.md's list of what a resume may change";

  for (const Refused& r : refused) {
    const CliResult resumed = b.Resume(r.base, r.changes);
    EXPECT_EQ(resumed.code, kExitBadInput) << r.flag << ": " << Describe(resumed);
    if (r.strict) {
      EXPECT_NE(resumed.err.find("differ from the checkpointed run's"), std::string::npos) << r.flag << ": "
                                                                                           << resumed.err;
    }
    // Named as a flag in the list of differences (the message's head names several as advice).
    const size_t list = resumed.err.find("):\n");
    const std::string named = r.strict && list != std::string::npos ? resumed.err.substr(list) : resumed.err;
    EXPECT_NE(named.find(r.flag), std::string::npos) << r.flag << " is not named: " << resumed.err;
  }
  int copies = 0;
  for (const MayChange& m : may_change) {
    const CliResult resumed = b.Resume(m.base, m.changes, b.dir.File("copy-" + std::to_string(copies++)));
    EXPECT_EQ(resumed.code, 0) << m.flag << ": " << Describe(resumed);
  }
}

}  // namespace
}  // namespace xmlt::apps
