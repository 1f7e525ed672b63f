// Tests of the .xmlb cache: exact round trip, and rejection of corrupt, truncated or foreign files.
#include "data/binary_cache.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "data/input_error.h"
#include "data/text_reader.h"
#include "tests/test_support.h"

namespace xmlt::data {
namespace {

template <class T>
std::vector<T> Vec(const SharedArray<T>& a) {
  return std::vector<T>(a.begin(), a.end());
}

Dataset SmallDataset() {
  return ParseLabeledText("4 10 6\n0,5 1:0.25 9:-3\n 2:1\n3\n1,2 0:1e-7 4:2 4:1\n", "small.txt",
                          {});
}

void ExpectCorrupt(const std::string& path, const std::string& fragment) {
  try {
    ReadBinaryCache(path);
    ADD_FAILURE() << "no error reading " << path;
  } catch (const InputError& e) {
    EXPECT_EQ(e.file(), path);
    EXPECT_EQ(e.line(), 0u);
    EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
  }
}

TEST(BinaryCacheTest, RoundTripKeepsEveryArrayAndTheWarnings) {
  const testing::TempDir dir;
  const Dataset original = SmallDataset();
  ASSERT_EQ(original.warnings.size(), 1u);  // the repeated feature id
  WriteBinaryCache(original, dir.File("a.xmlb"), true);
  EXPECT_TRUE(IsBinaryCache(dir.File("a.xmlb")));
  bool one_based = false;
  const Dataset read = ReadBinaryCache(dir.File("a.xmlb"), &one_based);
  EXPECT_TRUE(one_based);
  EXPECT_EQ(read.num_rows(), 4u);
  EXPECT_EQ(read.num_features(), 10u);
  EXPECT_EQ(read.num_labels(), 6u);
  EXPECT_EQ(Vec(read.features.row_ptr), Vec(original.features.row_ptr));
  EXPECT_EQ(Vec(read.features.col_idx), Vec(original.features.col_idx));
  EXPECT_EQ(Vec(read.features.values), Vec(original.features.values));
  EXPECT_EQ(Vec(read.labels.row_ptr), Vec(original.labels.row_ptr));
  EXPECT_EQ(Vec(read.labels.col_idx), Vec(original.labels.col_idx));
  EXPECT_TRUE(read.labels.binary());
  EXPECT_EQ(read.warnings, original.warnings);
  EXPECT_EQ(read.source, dir.File("a.xmlb"));
  // Arrays are borrowed from the file's copy in memory, 8-byte aligned.
  EXPECT_EQ(reinterpret_cast<uintptr_t>(read.features.row_ptr.data()) % 8, 0u);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(read.labels.row_ptr.data()) % 8, 0u);
  WriteBinaryCache(original, dir.File("b.xmlb"), false);
  ReadBinaryCache(dir.File("b.xmlb"), &one_based);
  EXPECT_FALSE(one_based);
}

TEST(BinaryCacheTest, ArraysOutliveTheDatasetThatReadThem) {
  const testing::TempDir dir;
  WriteBinaryCache(SmallDataset(), dir.File("a.xmlb"), false);
  SharedArray<uint32_t> cols;
  {
    const Dataset read = ReadBinaryCache(dir.File("a.xmlb"));
    cols = read.features.col_idx;
  }
  std::filesystem::remove(dir.File("a.xmlb"));
  EXPECT_EQ(std::vector<uint32_t>(cols.begin(), cols.end()),
            (std::vector<uint32_t>{1, 9, 2, 0, 4}));
}

// Issue: reliability, third round, row 8. A cache rewritten in place while a run uses it (`cp` over
// it: the same file, truncated and written again) must not change the run's data nor kill it: the
// mapping it was read through gave the new bytes, or SIGBUS for a shorter file. The data read is
// the reader's own copy, the bytes its checksum was checked on.
TEST(BinaryCacheTest, ACacheRewrittenInPlaceDoesNotChangeTheDataReadFromIt) {
  const testing::TempDir dir;
  const std::string path = dir.File("a.xmlb");
  const Dataset original = SmallDataset();
  WriteBinaryCache(original, path, false);
  const Dataset read = ReadBinaryCache(path);
  const uint64_t size = std::filesystem::file_size(path);
  {
    std::FILE* same_size = std::fopen(path.c_str(), "r+b");  // in place, not a new file renamed over it
    ASSERT_NE(same_size, nullptr);
    const std::vector<char> zeros(size, 0);
    ASSERT_EQ(std::fwrite(zeros.data(), 1, zeros.size(), same_size), zeros.size());
    ASSERT_EQ(std::fclose(same_size), 0);
  }
  EXPECT_EQ(Vec(read.features.col_idx), Vec(original.features.col_idx));
  EXPECT_EQ(Vec(read.features.values), Vec(original.features.values));
  EXPECT_EQ(Vec(read.labels.row_ptr), Vec(original.labels.row_ptr));
  std::filesystem::resize_file(path, 0);  // pages of a mapping past the end would raise SIGBUS
  EXPECT_EQ(Vec(read.labels.col_idx), Vec(original.labels.col_idx));
  EXPECT_EQ(Vec(read.features.row_ptr), Vec(original.features.row_ptr));
}

TEST(BinaryCacheTest, EmptyDataset) {
  const testing::TempDir dir;
  const Dataset empty = ParseLabeledText("0 3 2\n", "e.txt", {});
  WriteBinaryCache(empty, dir.File("e.xmlb"), false);
  const Dataset read = ReadBinaryCache(dir.File("e.xmlb"));
  EXPECT_EQ(read.num_rows(), 0u);
  EXPECT_EQ(read.num_features(), 3u);
  EXPECT_EQ(Vec(read.features.row_ptr), std::vector<uint64_t>{0});
}

TEST(BinaryCacheTest, EveryFlippedByteIsDetected) {
  const testing::TempDir dir;
  WriteBinaryCache(SmallDataset(), dir.File("a.xmlb"), false);
  const std::string good = testing::ReadFile(dir.File("a.xmlb"));
  // Past the magic: a flipped magic byte makes it "not a cache" rather than a corrupt one.
  for (size_t i = 8; i < good.size(); ++i) {
    std::string bad = good;
    bad[i] ^= 0x10;
    testing::WriteFile(dir.File("bad.xmlb"), bad);
    EXPECT_THROW(ReadBinaryCache(dir.File("bad.xmlb")), InputError) << "byte " << i;
  }
  std::string bad = good;
  bad[good.size() - 1] ^= 1;
  testing::WriteFile(dir.File("bad.xmlb"), bad);
  ExpectCorrupt(dir.File("bad.xmlb"), "checksum mismatch");
}

TEST(BinaryCacheTest, TruncatedOrForeignFiles) {
  const testing::TempDir dir;
  WriteBinaryCache(SmallDataset(), dir.File("a.xmlb"), false);
  const std::string good = testing::ReadFile(dir.File("a.xmlb"));
  testing::WriteFile(dir.File("t.xmlb"), good.substr(0, good.size() - 8));
  ExpectCorrupt(dir.File("t.xmlb"), "the header says");
  testing::WriteFile(dir.File("t.xmlb"), good.substr(0, 40));
  ExpectCorrupt(dir.File("t.xmlb"), "too short");
  testing::WriteFile(dir.File("t.xmlb"), good + std::string(8, '\0'));
  ExpectCorrupt(dir.File("t.xmlb"), "the header says");
  testing::WriteFile(dir.File("t.xmlb"), "4 10 6\n0 1:1\n");
  ExpectCorrupt(dir.File("t.xmlb"), "bad magic");
  EXPECT_FALSE(IsBinaryCache(dir.File("t.xmlb")));
  testing::WriteFile(dir.File("t.xmlb"), "");
  ExpectCorrupt(dir.File("t.xmlb"), "bad magic");
  ExpectCorrupt(dir.File("missing.xmlb"), "cannot open");
  EXPECT_FALSE(IsBinaryCache(dir.File("missing.xmlb")));
}

TEST(BinaryCacheTest, HugeSizesInAForgedHeaderAreRejectedBeforeUse) {
  const testing::TempDir dir;
  WriteBinaryCache(SmallDataset(), dir.File("a.xmlb"), false);
  std::string forged = testing::ReadFile(dir.File("a.xmlb"));
  const uint64_t huge = uint64_t{1} << 60;
  std::memcpy(&forged[32], &huge, sizeof huge);  // rows
  testing::WriteFile(dir.File("f.xmlb"), forged);
  ExpectCorrupt(dir.File("f.xmlb"), "do not fit the file");
}

TEST(BinaryCacheTest, TheSourceStampRoundTripsAndTheHeaderAloneGivesIt) {
  const testing::TempDir dir;
  SourceStamp stamp;
  stamp.bytes = 123456789012;
  stamp.mtime_ns = -5;  // a time before the epoch is still a time
  stamp.content = 0xfedcba9876543210;
  WriteBinaryCache(SmallDataset(), dir.File("a.xmlb"), true, stamp);
  SourceStamp read;
  ReadBinaryCache(dir.File("a.xmlb"), nullptr, &read);
  EXPECT_EQ(read, stamp);
  bool one_based = false;
  SourceStamp key;
  ReadBinaryCacheKey(dir.File("a.xmlb"), &one_based, &key);
  EXPECT_TRUE(one_based);
  EXPECT_EQ(key, stamp);

  WriteBinaryCache(SmallDataset(), dir.File("b.xmlb"), false);  // made from no text
  ReadBinaryCache(dir.File("b.xmlb"), nullptr, &read);
  EXPECT_TRUE(read.empty());
}

// A cache of format 1 (no source stamp) cannot be checked against its text: it is refused, naming
// the command that makes it again.
TEST(BinaryCacheTest, AnOlderVersionIsRefusedWithTheWayOut) {
  const testing::TempDir dir;
  WriteBinaryCache(SmallDataset(), dir.File("a.xmlb"), false);
  std::string old = testing::ReadFile(dir.File("a.xmlb"));
  const uint32_t version = 1;
  std::memcpy(&old[8], &version, sizeof version);
  testing::WriteFile(dir.File("old.xmlb"), old.substr(0, 152));  // a small file of the old size
  ExpectCorrupt(dir.File("old.xmlb"), "made by an older xmltrain; make it again with `xmltrain convert`");
  bool one_based = false;
  SourceStamp key;
  EXPECT_THROW(ReadBinaryCacheKey(dir.File("old.xmlb"), &one_based, &key), InputError);
  const uint32_t future = 3;
  std::memcpy(&old[8], &future, sizeof future);
  testing::WriteFile(dir.File("new.xmlb"), old);
  ExpectCorrupt(dir.File("new.xmlb"), "version 3 is not supported");
}

TEST(BinaryCacheTest, WritesAtomically) {
  const testing::TempDir dir;
  WriteBinaryCache(SmallDataset(), dir.File("a.xmlb"), false);
  size_t files = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir.path())) {
    ++files;
    EXPECT_EQ(entry.path().filename(), "a.xmlb");
  }
  EXPECT_EQ(files, 1u);  // no temporary left behind
}

}  // namespace
}  // namespace xmlt::data
