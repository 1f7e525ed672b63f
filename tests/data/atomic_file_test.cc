// Tests of AtomicFile: the target changes only on Commit, and nothing is left behind otherwise.
#include "data/atomic_file.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <stdexcept>

#include "tests/test_support.h"

namespace xmlt::data {
namespace {

size_t FilesIn(const std::string& dir) {
  size_t n = 0;
  for ([[maybe_unused]] const auto& entry : std::filesystem::directory_iterator(dir)) ++n;
  return n;
}

TEST(AtomicFileTest, CommitPublishesTheContent) {
  const testing::TempDir dir;
  {
    AtomicFile file(dir.File("out.txt"));
    file.Write("hello ");
    std::fprintf(file.stream(), "%d\n", 42);
    EXPECT_FALSE(std::filesystem::exists(dir.File("out.txt")));  // not before Commit
    file.Commit();
  }
  EXPECT_EQ(testing::ReadFile(dir.File("out.txt")), "hello 42\n");
  EXPECT_EQ(FilesIn(dir.path()), 1u);
}

TEST(AtomicFileTest, NoPartialFileWithoutCommit) {
  const testing::TempDir dir;
  {
    AtomicFile file(dir.File("out.txt"));
    file.Write("partial");
  }
  EXPECT_FALSE(std::filesystem::exists(dir.File("out.txt")));
  EXPECT_EQ(FilesIn(dir.path()), 0u);
}

TEST(AtomicFileTest, OldContentSurvivesAnAbandonedRewrite) {
  const testing::TempDir dir;
  testing::WriteFile(dir.File("out.txt"), "old");
  try {
    AtomicFile file(dir.File("out.txt"));
    file.Write("new and incomplete");
    throw std::runtime_error("writer failed");
  } catch (const std::runtime_error&) {
  }
  EXPECT_EQ(testing::ReadFile(dir.File("out.txt")), "old");
  EXPECT_EQ(FilesIn(dir.path()), 1u);
  AtomicFile file(dir.File("out.txt"));
  file.Write("new");
  file.Commit();
  EXPECT_EQ(testing::ReadFile(dir.File("out.txt")), "new");
}

TEST(AtomicFileTest, UnwritableDirectoryThrows) {
  EXPECT_THROW(AtomicFile("/nonexistent-dir/xmlt/out.txt"), std::runtime_error);
}

}  // namespace
}  // namespace xmlt::data
