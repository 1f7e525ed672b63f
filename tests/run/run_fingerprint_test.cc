// Tests of the comparison a resume makes (run/run_progress.h: CheckSameRun): the settings recorded
// around the loop, the notes beside them, and the data's checksum a ranker setting explains.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "run/run_progress.h"

namespace xmlt::run {
namespace {

using nlohmann::json;

// The loop's settings of a checkpoint, with the outer ones a later build records.
json Loop() { return {{"batch", 128}, {"lr", 0.3}, {"train_rows", 1000}, {"train_checksum", 7}}; }
json Outer() { return {{"ranker", "auto"}, {"ranker_blend", "auto"}, {"ranker_holdout", 0.1}, {"lr_scaling", "none"}}; }
std::vector<std::string> Keys(const json& settings) {
  std::vector<std::string> keys;
  for (const auto& item : settings.items()) keys.push_back(item.key());
  return keys;
}

std::vector<SettingDifference> Differences(const json& saved, const json& now, const std::vector<std::string>& later) {
  try {
    CheckSameRun(saved, now, "ckpt", {}, later);
  } catch (const RunMismatch& e) {
    return e.differences();
  }
  return {};
}

TEST(RunFingerprint, ACheckpointWrittenBeforeTheOuterSettingsIsNotHeldToThem) {
  const json now = WithOuterSettings(Loop(), Outer(), json::object());
  EXPECT_TRUE(Differences(Loop(), now, Keys(Outer())).empty());
  // One that records them is.
  json saved = WithOuterSettings(Loop(), Outer(), json::object());
  saved["lr_scaling"] = "linear";
  const std::vector<SettingDifference> d = Differences(saved, now, Keys(Outer()));
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d[0].name, "lr_scaling");
  EXPECT_EQ(d[0].checkpoint, "\"linear\"");
}

TEST(RunFingerprint, AnotherHeldOutShareIsNamedInsteadOfTheDataItChanges) {
  json saved = WithOuterSettings(Loop(), Outer(), json::object());
  json outer = Outer();
  outer["ranker_holdout"] = 0.2;
  json now = WithOuterSettings(Loop(), outer, json::object());
  now["train_rows"] = 1100;
  now["train_checksum"] = 8;
  const std::vector<SettingDifference> d = Differences(saved, now, Keys(outer));
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d[0].name, "ranker_holdout");
  // The same rows with the same ranker: the data changed, and is named.
  now = WithOuterSettings(Loop(), Outer(), json::object());
  now["train_checksum"] = 8;
  const std::vector<SettingDifference> data = Differences(saved, now, Keys(Outer()));
  ASSERT_EQ(data.size(), 1u);
  EXPECT_EQ(data[0].name, "train_checksum");
}

TEST(RunFingerprint, NotesAreShownBesideTheValuesAndNeverCompared) {
  const json saved = WithOuterSettings(Loop(), Outer(), {{"lr", "--lr 0.3"}});
  json now = WithOuterSettings(Loop(), Outer(), {{"lr", "--lr 0.3 scaled linear for 2 devices"}});
  EXPECT_TRUE(Differences(saved, now, Keys(Outer())).empty()) << "notes differ, settings do not";
  now["lr"] = 0.6;
  const std::vector<SettingDifference> d = Differences(saved, now, Keys(Outer()));
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d[0].checkpoint_note, "--lr 0.3");
  EXPECT_EQ(d[0].now_note, "--lr 0.3 scaled linear for 2 devices");
  try {
    CheckSameRun(saved, now, "ckpt", {}, Keys(Outer()));
  } catch (const RunMismatch& e) {
    EXPECT_NE(std::string(e.what()).find("lr: checkpoint 0.3 (--lr 0.3), now 0.6 (--lr 0.3 scaled linear for 2 devices)"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace xmlt::run
