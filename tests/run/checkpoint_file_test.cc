// The checkpoint container: round trip, every way a file can be damaged, a process killed in the
// middle of writing one, which must leave the previous checkpoint loadable, and sections made
// piece by piece while they are written (a device's optimizer state), which make the same file.
#include "run/checkpoint_file.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <stdexcept>
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

// A section made piece by piece while it is written is the section added whole: the same bytes in
// the file and the same checksum, whatever the pieces (uneven, empty ones among them).
TEST(CheckpointFile, AStreamedSectionIsTheSectionAddedWhole) {
  std::vector<float> momentum(1000);
  for (size_t i = 0; i < momentum.size(); ++i) momentum[i] = 0.25f * float(i) - 7.0f;
  const std::vector<uint64_t> order = {4, 1, 3};
  testing::TempDir whole_dir, streamed_dir;
  CheckpointWriter whole(R"({"step": 7})");
  whole.Add("order", order);
  whole.Add("momentum", momentum);
  whole.Add("empty", std::vector<float>{});
  whole.Write(whole_dir.path());

  CheckpointWriter streamed(R"({"step": 7})");
  streamed.Add("order", order);
  size_t pieces = 0;
  streamed.AddStreamed("momentum", momentum.size() * sizeof(float), [&](const CheckpointWriter::PieceWriter& write) {
    // Pieces of 0, 1, 2, ... values, and whatever is left: the staging buffer is reused between
    // them, as a GPU's chunk is.
    std::vector<float> staging(momentum.size());
    size_t at = 0;
    for (size_t count = 0; at < momentum.size(); ++count, ++pieces) {
      const size_t n = std::min(count, momentum.size() - at);
      std::copy(momentum.begin() + at, momentum.begin() + at + n, staging.begin());
      write(staging.data(), n * sizeof(float));
      std::fill(staging.begin(), staging.end(), -1.0f);
      at += n;
    }
  });
  streamed.AddStreamed("empty", 0, [](const CheckpointWriter::PieceWriter&) {});
  streamed.Write(streamed_dir.path());
  EXPECT_GT(pieces, 10u);

  const std::vector<char> expected = FileBytes(CheckpointPath(whole_dir.path()));
  EXPECT_EQ(FileBytes(CheckpointPath(streamed_dir.path())), expected);  // the checksum at its end too
  const CheckpointReader reader = CheckpointReader::Open(streamed_dir.path());
  EXPECT_EQ(reader.Read<float>("momentum", momentum.size()), momentum);
  // The values where the reader holds them: the file's bytes, not necessarily aligned for a float.
  const CheckpointReader::ValueView view = reader.View<float>("momentum", momentum.size());
  ASSERT_EQ(view.count, momentum.size());
  EXPECT_EQ(std::memcmp(view.bytes, momentum.data(), momentum.size() * sizeof(float)), 0);
  EXPECT_THROW(reader.View<float>("momentum", momentum.size() + 1), data::InputError);
}

// A producer that fails, or makes another size than it announced, fails the write: the previous
// checkpoint stays, whole, and no temporary file is left behind.
TEST(CheckpointFile, AFailedProducerLeavesThePreviousCheckpoint) {
  testing::TempDir dir;
  WriteSample(dir.path(), 42);
  const std::vector<char> previous = FileBytes(CheckpointPath(dir.path()));
  const std::vector<float> values(100, 1.0f);
  const size_t bytes = values.size() * sizeof(float);
  auto attempt = [&](const CheckpointWriter::Producer& produce) {
    CheckpointWriter writer("{}");
    writer.Add("params", values);
    writer.AddStreamed("momentum", bytes, produce);
    writer.Add("after", values);
    writer.Write(dir.path());
  };
  EXPECT_THROW(attempt([&](const CheckpointWriter::PieceWriter& write) {
                 write(values.data(), bytes / 2);
                 throw std::runtime_error("the GPU was lost");
               }),
               std::runtime_error);
  EXPECT_THROW(attempt([&](const CheckpointWriter::PieceWriter& write) { write(values.data(), bytes - 1); }),
               std::logic_error);
  EXPECT_THROW(attempt([&](const CheckpointWriter::PieceWriter& write) {
                 write(values.data(), bytes);
                 write(values.data(), 1);
               }),
               std::logic_error);
  EXPECT_EQ(FileBytes(CheckpointPath(dir.path())), previous);
  EXPECT_EQ(CheckpointReader::Open(dir.path()).Read<float>("params")[0], 42.0f);
  for (const auto& entry : std::filesystem::directory_iterator(dir.path()))
    EXPECT_EQ(entry.path().filename().string(), "checkpoint.xmlc") << "left behind";
  EXPECT_THROW(CheckpointWriter("{}").AddStreamed("momentum", bytes, nullptr), std::invalid_argument);
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
