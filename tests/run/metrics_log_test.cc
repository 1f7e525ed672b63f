// Tests of the JSON-lines metrics: every key README documents, with the record's values, valid
// JSON for awkward values, and the FILE.partial -> FILE life cycle.
#include "run/metrics_log.h"

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <limits>
#include <nlohmann/json.hpp>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "tests/test_support.h"

namespace xmlt::run {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// Every field distinct, so a key wired to the wrong field shows.
EvalRecord SampleRecord() {
  EvalRecord r;
  r.megabatch = 12;
  r.epoch = 2.5;
  r.train_time_s = 3.25;
  r.wall_time_s = 4.5;
  r.eval_time_s = 0.75;
  r.train_loss = 1.125;
  r.train_samples = 9876;
  r.test.metrics.p1 = 0.61;
  r.test.metrics.p3 = 0.37;
  r.test.metrics.p5 = 0.27;
  r.test.metrics.ndcg3 = 0.52;
  r.test.metrics.ndcg5 = 0.55;
  r.test.loss = 2.0625;
  r.test.rows = 2515;
  r.perturbed = true;
  r.devices.push_back({"cpu:0", 128, 0.3, 40, 5120, 0.625, 1.5, 0.25, false, ""});
  r.devices.push_back({"cuda:1", 64, 0.15, 80, 5120, 0.375, 2.5, 0.5, false, ""});
  return r;
}

std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

TEST(MetricsLogTest, JsonHasEveryDesignKeyWithTheRecordsValues) {
  const json j = json::parse(ToJson(SampleRecord()));
  ASSERT_TRUE(j.is_object());
  for (const char* key : {"megabatch", "epoch", "train_time_s", "wall_time_s", "p1", "p3", "p5",
                          "ndcg3", "ndcg5", "loss", "perturbed", "devices"})
    EXPECT_TRUE(j.contains(key)) << key;
  EXPECT_EQ(j["megabatch"].get<uint64_t>(), 12u);
  EXPECT_EQ(j["epoch"].get<double>(), 2.5);
  EXPECT_EQ(j["train_time_s"].get<double>(), 3.25);
  EXPECT_EQ(j["wall_time_s"].get<double>(), 4.5);
  EXPECT_EQ(j["p1"].get<double>(), 0.61);
  EXPECT_EQ(j["p3"].get<double>(), 0.37);
  EXPECT_EQ(j["p5"].get<double>(), 0.27);
  EXPECT_EQ(j["ndcg3"].get<double>(), 0.52);
  EXPECT_EQ(j["ndcg5"].get<double>(), 0.55);
  EXPECT_EQ(j["loss"].get<double>(), 2.0625);  // the test loss, not the training loss
  EXPECT_EQ(j["perturbed"].get<bool>(), true);
  // Extras the CLI summary relies on.
  EXPECT_EQ(j["train_samples"].get<uint64_t>(), 9876u);
  EXPECT_EQ(j["train_loss"].get<double>(), 1.125);

  ASSERT_TRUE(j["devices"].is_array());
  ASSERT_EQ(j["devices"].size(), 2u);
  const json& d = j["devices"][1];
  for (const char* key : {"id", "batch", "lr", "updates", "weight", "busy_s", "idle_s"})
    EXPECT_TRUE(d.contains(key)) << key;
  EXPECT_EQ(d["id"].get<std::string>(), "cuda:1");
  EXPECT_EQ(d["batch"].get<uint32_t>(), 64u);
  EXPECT_EQ(d["lr"].get<double>(), 0.15);
  EXPECT_EQ(d["updates"].get<uint64_t>(), 80u);
  EXPECT_EQ(d["weight"].get<double>(), 0.375);
  EXPECT_EQ(d["busy_s"].get<double>(), 2.5);
  EXPECT_EQ(d["idle_s"].get<double>(), 0.5);
  EXPECT_EQ(j["devices"][0]["id"].get<std::string>(), "cpu:0");
}

TEST(MetricsLogTest, WithoutATestSetTheTestMetricsAreLeftOut) {
  // A run without --test has nothing to report for P@k or the test loss; zeros would read as a
  // model that is always wrong.
  EvalRecord r = SampleRecord();
  r.test = engine::Evaluation{};
  const json j = json::parse(ToJson(r));
  for (const char* key : {"p1", "p3", "p5", "ndcg3", "ndcg5", "loss"})
    EXPECT_FALSE(j.contains(key)) << key;
  for (const char* key :
       {"megabatch", "epoch", "train_time_s", "wall_time_s", "perturbed", "devices"})
    EXPECT_TRUE(j.contains(key)) << key;
  EXPECT_EQ(j["train_loss"].get<double>(), 1.125);
}

TEST(MetricsLogTest, JsonIsOneLineAndValidForAwkwardValues) {
  EvalRecord r = SampleRecord();
  r.test.loss = std::numeric_limits<double>::quiet_NaN();
  r.train_loss = std::numeric_limits<double>::infinity();
  r.devices[0].id = "odd \"id\"\\\n\ttab";
  const std::string text = ToJson(r);
  EXPECT_EQ(text.find('\n'), std::string::npos);
  json j;
  ASSERT_NO_THROW(j = json::parse(text)) << text;
  EXPECT_EQ(j["devices"][0]["id"].get<std::string>(), r.devices[0].id);
  EXPECT_EQ(json::parse(ToJson(EvalRecord{}))["devices"].size(), 0u);
}

// Issue: reliability, third round, row 5. JSON has no NaN or infinity: a diverged evaluation's
// values are written as null, and a checkpoint's records (this JSON) must read them back, as NaN,
// or the run could never be resumed. Written again they are null again.
TEST(MetricsLogTest, NonFiniteValuesAreWrittenAsNullAndReadBackAsNaN) {
  EvalRecord r = SampleRecord();
  r.test.loss = std::numeric_limits<double>::quiet_NaN();
  r.train_loss = std::numeric_limits<double>::infinity();
  r.test.metrics.ndcg5 = -std::numeric_limits<double>::infinity();
  const std::string text = ToJson(r);
  const json j = json::parse(text);
  EXPECT_TRUE(j["loss"].is_null()) << text;
  EXPECT_TRUE(j["train_loss"].is_null()) << text;
  EXPECT_TRUE(j["ndcg5"].is_null()) << text;
  EvalRecord back;
  ASSERT_NO_THROW(back = EvalRecordFromJson(text)) << text;
  EXPECT_TRUE(std::isnan(back.test.loss));
  EXPECT_TRUE(std::isnan(back.train_loss));
  EXPECT_TRUE(std::isnan(back.test.metrics.ndcg5));
  EXPECT_EQ(back.test.metrics.p1, r.test.metrics.p1);
  EXPECT_EQ(ToJson(back), text);
  // null where a count belongs is still a corrupt record.
  json broken = j;
  broken["test_rows"] = nullptr;
  EXPECT_THROW(EvalRecordFromJson(broken.dump()), std::invalid_argument);
}

TEST(MetricsLogTest, FileIsPartialUntilFinish) {
  testing::TempDir dir;
  const std::string path = dir.File("metrics.jsonl");
  MetricsLog log(path);
  EXPECT_TRUE(fs::exists(path + ".partial"));
  EXPECT_FALSE(fs::exists(path));

  EvalRecord first = SampleRecord(), second = SampleRecord();
  second.megabatch = 24;
  second.epoch = 5;
  log.Append(first);
  // Flushed per line, so it can be followed while training.
  EXPECT_EQ(Lines(testing::ReadFile(path + ".partial")).size(), 1u);
  log.Append(second);
  EXPECT_FALSE(fs::exists(path));

  log.Finish();
  EXPECT_FALSE(fs::exists(path + ".partial"));
  ASSERT_TRUE(fs::exists(path));
  const std::string text = testing::ReadFile(path);
  EXPECT_EQ(text.back(), '\n');
  const std::vector<std::string> lines = Lines(text);
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(json::parse(lines[0])["megabatch"].get<uint64_t>(), 12u);
  EXPECT_EQ(json::parse(lines[1])["megabatch"].get<uint64_t>(), 24u);
  EXPECT_EQ(json::parse(lines[1])["epoch"].get<double>(), 5.0);
  EXPECT_NO_THROW(log.Finish());  // a second Finish does nothing
}

TEST(MetricsLogTest, UnfinishedLogStaysPartial) {
  testing::TempDir dir;
  const std::string path = dir.File("metrics.jsonl");
  {
    MetricsLog log(path);
    log.Append(SampleRecord());
  }
  EXPECT_FALSE(fs::exists(path));
  ASSERT_TRUE(fs::exists(path + ".partial"));
  EXPECT_EQ(Lines(testing::ReadFile(path + ".partial")).size(), 1u);
}

TEST(MetricsLogTest, NewLogReplacesAnOldPartialFile) {
  testing::TempDir dir;
  const std::string path = dir.File("metrics.jsonl");
  testing::WriteFile(path + ".partial", "stale line\n");
  MetricsLog log(path);
  log.Append(SampleRecord());
  log.Finish();
  const std::vector<std::string> lines = Lines(testing::ReadFile(path));
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_NO_THROW(json::parse(lines[0]));
}

// Issue: reliability, second round, row 14. A run refused before it trains (bad flags, a refused
// --resume) must not empty an earlier run's FILE.partial, nor leave a new empty one behind.
TEST(MetricsLogTest, ALogThatNeverStartsLeavesAnEarlierPartialFileAsItWas) {
  testing::TempDir dir;
  const std::string path = dir.File("metrics.jsonl");
  testing::WriteFile(path + ".partial", "line of an earlier run\n");
  { MetricsLog log(path); }
  EXPECT_EQ(testing::ReadFile(path + ".partial"), "line of an earlier run\n");
  {
    MetricsLog log(path);
    log.Begin();  // a fresh run starts
  }
  EXPECT_EQ(testing::ReadFile(path + ".partial"), "");
  const std::string other = dir.File("other.jsonl");
  { MetricsLog log(other); }
  EXPECT_FALSE(fs::exists(other + ".partial"));
}

// Issue: reliability, third round, row 1. The lock that refuses a second writer must hold for the
// whole run: emptying the file when the run starts (Begin, Restart) once reopened it, which let go
// of the lock, and a second run then emptied and renamed the first one's file under it.
TEST(MetricsLogTest, TheLockHoldsAfterTheRunStartsAndUntilTheFileIsRenamed) {
  testing::TempDir dir;
  const std::string path = dir.File("metrics.jsonl");
  for (const bool resumed : {false, true}) {
    MetricsLog first(path);
    EvalRecord earlier = SampleRecord();
    earlier.megabatch = 1;
    if (resumed) {
      first.Restart({earlier});
    } else {
      first.Begin();
      first.Append(earlier);
    }
    EXPECT_THROW(MetricsLog second(path), std::runtime_error);
    first.Append(SampleRecord());
    EXPECT_THROW(MetricsLog second(path), std::runtime_error);
    first.Finish();
    const std::vector<std::string> lines = Lines(testing::ReadFile(path));
    ASSERT_EQ(lines.size(), 2u) << "resumed " << resumed;
    EXPECT_EQ(json::parse(lines[0])["megabatch"].get<uint64_t>(), 1u);
    EXPECT_EQ(json::parse(lines[1])["megabatch"].get<uint64_t>(), 12u);
  }
}

TEST(MetricsLogTest, EmptyPathDiscardsRecords) {
  testing::TempDir dir;
  const fs::path old = fs::current_path();
  fs::current_path(dir.path());
  {
    MetricsLog log("");
    log.Append(SampleRecord());
    log.Finish();
  }
  fs::current_path(old);
  EXPECT_TRUE(fs::is_empty(dir.path()));
}

TEST(MetricsLogTest, UnwritablePathThrowsNamingIt) {
  testing::TempDir dir;
  const std::string path = dir.File("missing-dir/metrics.jsonl");
  try {
    MetricsLog log(path);
    ADD_FAILURE() << "no error";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace xmlt::run
