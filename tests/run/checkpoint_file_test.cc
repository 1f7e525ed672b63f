// The checkpoint container: round trip, every way a file can be damaged, and a process killed in
// the middle of writing one, which must leave the previous checkpoint loadable.
#include "run/checkpoint_file.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>

#include "data/input_error.h"
#include "tests/test_support.h"

namespace xmlt::run {
namespace {

std::vector<char> FileBytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::vector<char>(std::istreambuf_iterator<char>(in), {});
}

void WriteSample(const std::string& dir, float first) {
  const std::vector<float> params = {first, 2.5f, -3.0f};
  const std::vector<uint64_t> order = {4, 1, 3};
  CheckpointWriter writer(R"({"step": 7})");
  writer.Add("params", params);
  writer.Add("order", order);
  writer.Add("empty", std::vector<float>{});
  writer.Write(dir);
}

TEST(CheckpointFile, RoundTripsStateAndSections) {
  testing::TempDir dir;
  WriteSample(dir.path() + "/run", 1.5f);  // the directory is created
  const CheckpointReader reader = CheckpointReader::Open(dir.path() + "/run");
  EXPECT_EQ(reader.meta(), R"({"step": 7})");
  EXPECT_EQ(reader.Read<float>("params"), (std::vector<float>{1.5f, 2.5f, -3.0f}));
  EXPECT_EQ(reader.Read<uint64_t>("order", 3), (std::vector<uint64_t>{4, 1, 3}));
  EXPECT_TRUE(reader.Read<float>("empty").empty());
  EXPECT_TRUE(reader.Has("order"));
  EXPECT_FALSE(reader.Has("momentum"));
}

TEST(CheckpointFile, MissingOrMisSizedSectionsAreNamed) {
  testing::TempDir dir;
  WriteSample(dir.path(), 1);
  const CheckpointReader reader = CheckpointReader::Open(dir.path());
  try {
    reader.Read<float>("momentum");
    FAIL() << "expected an error";
  } catch (const data::InputError& e) {
    EXPECT_NE(std::string(e.what()).find("'momentum' is missing"), std::string::npos) << e.what();
  }
  EXPECT_THROW(reader.Read<float>("params", 4), data::InputError);     // wrong count
  EXPECT_THROW(reader.Read<uint64_t>("params"), data::InputError);     // 12 bytes: not whole u64s
}

TEST(CheckpointFile, EveryTruncationAndEveryFlippedByteIsDetected) {
  testing::TempDir dir;
  WriteSample(dir.path(), 1);
  const std::vector<char> good = FileBytes(CheckpointPath(dir.path()));
  for (size_t size = 0; size < good.size(); ++size) {
    std::vector<char> cut(good.begin(), good.begin() + size);
    EXPECT_THROW(CheckpointReader::Parse(cut, "cut"), data::InputError) << size << " bytes";
  }
  for (size_t at = 0; at < good.size(); ++at) {
    std::vector<char> flipped = good;
    flipped[at] ^= 0x10;
    EXPECT_THROW(CheckpointReader::Parse(flipped, "flipped"), data::InputError) << "byte " << at;
  }
  std::vector<char> longer = good;
  longer.push_back(0);
  EXPECT_THROW(CheckpointReader::Parse(longer, "longer"), data::InputError);
}

TEST(CheckpointFile, AMissingCheckpointSaysWhatResumeExpects) {
  testing::TempDir dir;
  try {
    CheckpointReader::Open(dir.path());
    FAIL() << "expected an error";
  } catch (const data::InputError& e) {
    EXPECT_NE(std::string(e.what()).find("resume from the folder the run wrote its checkpoints to"), std::string::npos)
        << e.what();
  }
}

TEST(CheckpointFile, ARewriteReplacesTheCheckpointAndClearsStaleTemporaries) {
  testing::TempDir dir;
  WriteSample(dir.path(), 1);
  const std::string stale = CheckpointPath(dir.path()) + ".tmp.999999";
  testing::WriteFile(stale, "half a checkpoint");
  WriteSample(dir.path(), 2);
  EXPECT_FALSE(std::filesystem::exists(stale));
  EXPECT_EQ(CheckpointReader::Open(dir.path()).Read<float>("params")[0], 2.0f);
}

// A child process rewrites a large checkpoint over and over; it is killed (SIGKILL: no cleanup)
// while a temporary file is being written. The previous checkpoint must load, intact.
TEST(CheckpointFile, AKillDuringWritingLeavesThePreviousCheckpointLoadable) {
  testing::TempDir dir;
  WriteSample(dir.path(), 42);
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    std::vector<float> big(32 << 20, 1.0f);  // 128 MiB: each write takes a while
    for (;;) {
      CheckpointWriter writer("{}");
      writer.Add("params", big);
      writer.Write(dir.path());
    }
  }
  const std::string temp_prefix = "checkpoint.xmlc.tmp.";
  bool killed_mid_write = false;
  for (int attempt = 0; attempt < 20000 && !killed_mid_write; ++attempt) {
    for (const auto& entry : std::filesystem::directory_iterator(dir.path())) {
      std::error_code error;
      if (entry.path().filename().string().rfind(temp_prefix, 0) == 0 && std::filesystem::file_size(entry.path(), error) > 0) {
        kill(child, SIGKILL);
        killed_mid_write = true;
        break;
      }
    }
    if (!killed_mid_write) std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
  if (!killed_mid_write) kill(child, SIGKILL);
  int status = 0;
  waitpid(child, &status, 0);
  ASSERT_TRUE(killed_mid_write) << "the child never started a write";
  // Whatever the child managed, the checkpoint is complete: the first one, or one of the child's.
  const CheckpointReader reader = CheckpointReader::Open(dir.path());
  const std::vector<float> params = reader.Read<float>("params");
  EXPECT_TRUE(params.size() == 3 ? params[0] == 42.0f : params.size() == size_t(32 << 20));
  WriteSample(dir.path(), 7);  // and the next write cleans up after the killed one
  for (const auto& entry : std::filesystem::directory_iterator(dir.path()))
    EXPECT_NE(entry.path().filename().string().rfind(temp_prefix, 0), 0u) << entry.path();
}

}  // namespace
}  // namespace xmlt::run
