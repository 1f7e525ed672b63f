// Tests of LoadDataset: files on disk, the split pair, and when the binary cache is (not) used.
#include "data/dataset_loader.h"

#include <gtest/gtest.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <functional>
#include <future>
#include <string>
#include <vector>

#include "data/binary_cache.h"
#include "data/input_error.h"
#include "data/text_reader.h"
#include "tests/test_support.h"

namespace xmlt::data {
namespace {

namespace fs = std::filesystem;

template <class T>
std::vector<T> Vec(const SharedArray<T>& a) {
  return std::vector<T>(a.begin(), a.end());
}

const char kText[] = "2 4 3\n0 1:1 2:2\n1,2 3:0.5\n";
const char kOtherText[] = "1 9 9\n8 8:8\n";  // cached under kText's name to see which one is read

void ExpectError(const std::function<void()>& load, const std::string& file, uint64_t line,
                 const std::string& fragment) {
  try {
    load();
    ADD_FAILURE() << "no error";
  } catch (const InputError& e) {
    EXPECT_EQ(e.file(), file) << e.what();
    EXPECT_EQ(e.line(), line) << e.what();
    EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
  }
}

// A text file and, beside it, a cache holding different data, stamped as made from the text or not.
struct CacheFixture : ::testing::Test {
  void Write(bool cache_current, bool cache_one_based = false) {
    testing::WriteFile(text, kText);
    const SourceStamp stamp = cache_current ? StampSource(text) : SourceStamp{};
    WriteBinaryCache(ParseLabeledText(kOtherText, "other", {}), cache, cache_one_based, stamp);
  }
  bool ReadCache(const LoadOptions& options = {}) {
    const Dataset d = LoadDataset(text, options);
    return d.num_features() == 9;
  }
  void ExpectStaleWarning() {
    const Dataset d = LoadDataset(text);
    EXPECT_EQ(d.num_features(), 4u);
    ASSERT_EQ(d.warnings.size(), 1u);
    EXPECT_NE(d.warnings[0].find(cache + " was made from another version of " + text),
              std::string::npos)
        << d.warnings[0];
  }
  testing::TempDir dir;
  std::string text = dir.File("data.txt");
  std::string cache = CachePathFor(text);
};

TEST(DatasetLoaderTest, LoadsATextFile) {
  const testing::TempDir dir;
  testing::WriteFile(dir.File("a.txt"), kText);
  const Dataset d = LoadDataset(dir.File("a.txt"));
  EXPECT_EQ(d.num_rows(), 2u);
  EXPECT_EQ(d.source, dir.File("a.txt"));
  EXPECT_EQ(Vec(d.labels.col_idx), (std::vector<uint32_t>{0, 1, 2}));
  EXPECT_FALSE(fs::exists(CachePathFor(dir.File("a.txt"))));  // loading never writes a cache
}

// Issue: reliability, third round, row 14. Editors on some systems begin a UTF-8 text with a byte
// order mark; it is not data (it was refused as "binary data (byte 0xef)").
TEST(DatasetLoaderTest, AUtf8ByteOrderMarkIsSkipped) {
  testing::TempDir dir;
  const std::string bom = "\xEF\xBB\xBF";
  testing::WriteFile(dir.File("bom.txt"), bom + kText);
  testing::WriteFile(dir.File("plain.txt"), kText);
  const Dataset with = LoadDataset(dir.File("bom.txt")), without = LoadDataset(dir.File("plain.txt"));
  EXPECT_EQ(with.num_rows(), without.num_rows());
  EXPECT_EQ(Vec(with.features.col_idx), Vec(without.features.col_idx));
  EXPECT_EQ(Vec(with.features.values), Vec(without.features.values));
  EXPECT_EQ(Vec(with.labels.col_idx), Vec(without.labels.col_idx));
  // A split pair's files too.
  testing::WriteFile(dir.File("x.txt"), bom + "2 4\n1:1 2:2\n3:0.5\n");
  testing::WriteFile(dir.File("y.txt"), bom + "2 3\n0:1\n1:1 2:1\n");
  const Dataset pair = LoadDataset(dir.File("x.txt"), {}, dir.File("y.txt"));
  EXPECT_EQ(pair.num_rows(), 2u);
  EXPECT_EQ(Vec(pair.labels.col_idx), (std::vector<uint32_t>{0, 1, 2}));
}

TEST(DatasetLoaderTest, MissingEmptyOrNonRegularFiles) {
  const testing::TempDir dir;
  ExpectError([&] { LoadDataset(dir.File("none.txt")); }, dir.File("none.txt"), 0, "cannot open");
  ExpectError([&] { LoadDataset(dir.path()); }, dir.path(), 0, "not a regular file");
  testing::WriteFile(dir.File("empty.txt"), "");
  ExpectError([&] { LoadDataset(dir.File("empty.txt")); }, dir.File("empty.txt"), 0, "empty file");
  testing::WriteFile(dir.File("bad.txt"), "2 4 3\n0 1:1\n0 7:1\n");
  ExpectError([&] { LoadDataset(dir.File("bad.txt")); }, dir.File("bad.txt"), 3,
              "feature id 7 out of range");
}

// A FIFO is refused at once: opening it for reading used to wait for a writer forever.
TEST(DatasetLoaderTest, AFifoIsRefusedWithoutWaitingForAWriter) {
  const testing::TempDir dir;
  const std::string fifo = dir.File("pipe.txt");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  for (const bool cache : {false, true}) {
    LoadOptions options;
    options.use_cache = cache;
    auto load = std::async(std::launch::async, [&] { LoadDataset(fifo, options); });
    if (load.wait_for(std::chrono::seconds(10)) != std::future_status::ready) {
      ADD_FAILURE() << "loading a FIFO blocked (cache " << cache << ")";
      // A writer lets a reader blocked in open() return (and then read end-of-file); a reader
      // blocked anywhere else cannot be freed, so the test process ends here rather than hang.
      const int writer = ::open(fifo.c_str(), O_WRONLY | O_NONBLOCK);
      if (writer < 0) std::_Exit(1);
      ::close(writer);
      load.wait();
      return;
    }
    ExpectError([&] { load.get(); }, fifo, 0, "not a regular file");
  }
}

TEST(DatasetLoaderTest, CachePathAppendsTheExtension) {
  EXPECT_EQ(CachePathFor("/d/train.txt"), "/d/train.txt.xmlb");
}

TEST(DatasetLoaderTest, ReadsACacheGivenDirectly) {
  const testing::TempDir dir;
  const Dataset d = ParseLabeledText(kText, "x", {});
  WriteBinaryCache(d, dir.File("c.bin"), false);  // recognised by its magic, not its name
  const Dataset read = LoadDataset(dir.File("c.bin"));
  EXPECT_EQ(Vec(read.features.col_idx), Vec(d.features.col_idx));
  EXPECT_EQ(read.source, dir.File("c.bin"));
}

TEST_F(CacheFixture, ACacheOfTheSameTextIsUsed) {
  Write(/*cache_current=*/true);
  EXPECT_TRUE(ReadCache());
  // The cache's own time does not matter, only the text's.
  fs::last_write_time(cache, fs::last_write_time(text) - std::chrono::hours(1));
  EXPECT_TRUE(ReadCache());
}

TEST_F(CacheFixture, ACacheMadeFromNoTextIsStale) {
  Write(/*cache_current=*/false);
  ExpectStaleWarning();
}

TEST_F(CacheFixture, TouchingTheTextMakesTheCacheStale) {
  Write(true);
  fs::last_write_time(text, fs::last_write_time(text) + std::chrono::nanoseconds(1000));
  ExpectStaleWarning();
}

// Row 5 of the second reliability round: `cp -p` or `rsync -t` put another text in place with a
// time older than the cache's; an mtime comparison used the stale cache.
TEST_F(CacheFixture, ATextReplacedByOneWithAnOlderTimeMakesTheCacheStale) {
  Write(true);
  const auto cache_time = fs::last_write_time(cache);
  testing::WriteFile(text, "2 4 3\n0 1:1 2:2\n1,2 3:0.7\n");  // the same size, one digit differs
  fs::last_write_time(text, cache_time - std::chrono::hours(1));
  ExpectStaleWarning();
}

// The same size and time, a change in the first or the last MiB: the content hash tells.
TEST_F(CacheFixture, AChangedHeadOrTailWithTheSameSizeAndTimeMakesTheCacheStale) {
  std::string body = "600000 4 3\n";  // 3.6 MB, so the head and the tail hashed are apart
  for (int row = 0; row < 600000; ++row) body += "0 1:1\n";
  for (const size_t at : {size_t{16}, body.size() - 2}) {
    testing::WriteFile(text, body);
    WriteBinaryCache(ParseLabeledText(kOtherText, "other", {}), cache, false, StampSource(text));
    EXPECT_TRUE(ReadCache());
    const auto time = fs::last_write_time(text);
    std::string changed = body;
    changed[at] = changed[at] == '1' ? '2' : '1';
    testing::WriteFile(text, changed);
    fs::last_write_time(text, time);
    EXPECT_FALSE(ReadCache()) << "byte " << at;
  }
}

TEST_F(CacheFixture, CacheMadeWithOtherOneBasedIsIgnored) {
  Write(true, /*cache_one_based=*/true);
  EXPECT_FALSE(ReadCache());
  LoadOptions one_based;
  one_based.one_based = true;
  EXPECT_TRUE(ReadCache(one_based));
}

TEST_F(CacheFixture, UseCacheFalseReadsTheText) {
  Write(true);
  LoadOptions options;
  options.use_cache = false;
  EXPECT_FALSE(ReadCache(options));
}

TEST_F(CacheFixture, CorruptCacheFallsBackToTheTextWithAWarning) {
  Write(true);
  std::string bytes = testing::ReadFile(cache);
  bytes[bytes.size() - 3] ^= 0x40;
  testing::WriteFile(cache, bytes);
  EXPECT_THROW(ReadBinaryCache(cache), InputError);
  const Dataset d = LoadDataset(text);
  EXPECT_EQ(d.num_features(), 4u);  // the text
  ASSERT_EQ(d.warnings.size(), 1u);
  EXPECT_NE(d.warnings[0].find(cache), std::string::npos) << d.warnings[0];
  EXPECT_NE(d.warnings[0].find("checksum"), std::string::npos) << d.warnings[0];
}

TEST_F(CacheFixture, TruncatedCacheFallsBackToTheText) {
  Write(true);
  const std::string bytes = testing::ReadFile(cache);
  testing::WriteFile(cache, bytes.substr(0, bytes.size() / 2));
  const Dataset d = LoadDataset(text);
  EXPECT_EQ(d.num_features(), 4u);
  ASSERT_EQ(d.warnings.size(), 1u);
}

TEST(DatasetLoaderTest, SplitPair) {
  const testing::TempDir dir;
  testing::WriteFile(dir.File("X.txt"), "3 5\n0:1 4:2\n2:1\n\n");
  testing::WriteFile(dir.File("Y.txt"), "3 4\n0:1 3:1\n\n2:1 1:1\n");
  const Dataset d = LoadDataset(dir.File("X.txt"), {}, dir.File("Y.txt"));
  EXPECT_EQ(d.num_rows(), 3u);
  EXPECT_EQ(d.num_features(), 5u);
  EXPECT_EQ(d.num_labels(), 4u);
  EXPECT_EQ(Vec(d.labels.row_ptr), (std::vector<uint64_t>{0, 2, 2, 4}));
  EXPECT_EQ(Vec(d.labels.col_idx), (std::vector<uint32_t>{0, 3, 1, 2}));
  EXPECT_TRUE(d.labels.binary());
  EXPECT_EQ(Vec(d.features.values), (std::vector<float>{1, 2, 1}));
  EXPECT_TRUE(d.warnings.empty());

  // A cache beside the features file is never used for a pair.
  WriteBinaryCache(ParseLabeledText(kOtherText, "other", {}), CachePathFor(dir.File("X.txt")),
                   false);
  EXPECT_EQ(LoadDataset(dir.File("X.txt"), {}, dir.File("Y.txt")).num_features(), 5u);

  LoadOptions one_based;
  one_based.one_based = true;
  testing::WriteFile(dir.File("Y1.txt"), "3 4\n1:1 4:1\n\n3:1 2:1\n");
  testing::WriteFile(dir.File("X1.txt"), "3 5\n1:1 5:2\n3:1\n\n");
  const Dataset d1 = LoadDataset(dir.File("X1.txt"), one_based, dir.File("Y1.txt"));
  EXPECT_EQ(Vec(d1.labels.col_idx), Vec(d.labels.col_idx));
  EXPECT_EQ(Vec(d1.features.col_idx), Vec(d.features.col_idx));
}

TEST(DatasetLoaderTest, SplitPairErrors) {
  const testing::TempDir dir;
  testing::WriteFile(dir.File("X.txt"), "3 5\n0:1 4:2\n2:1\n1:1\n");
  testing::WriteFile(dir.File("Y.txt"), "2 4\n0:1\n1:1\n");
  ExpectError([&] { LoadDataset(dir.File("X.txt"), {}, dir.File("Y.txt")); }, dir.File("Y.txt"), 0,
              "has 2 rows but");
  testing::WriteFile(dir.File("Y.txt"), "3 4\n0:1\n1:1\n5:1\n");
  ExpectError([&] { LoadDataset(dir.File("X.txt"), {}, dir.File("Y.txt")); }, dir.File("Y.txt"), 4,
              "id 5 out of range");
  testing::WriteFile(dir.File("Y.txt"), "3 4\n0:1\n1:1\n2:inf\n");
  ExpectError([&] { LoadDataset(dir.File("X.txt"), {}, dir.File("Y.txt")); }, dir.File("Y.txt"), 4,
              "NaN or infinite");
  ExpectError([&] { LoadDataset(dir.File("X.txt"), {}, dir.File("none.txt")); },
              dir.File("none.txt"), 0, "cannot open");
  testing::WriteFile(dir.File("Y.txt"), "3 4\n0:1\n1:1\n2:1\n");
  testing::WriteFile(dir.File("Xh.txt"), "3\n0:1\n");
  ExpectError([&] { LoadDataset(dir.File("Xh.txt"), {}, dir.File("Y.txt")); }, dir.File("Xh.txt"),
              1, "malformed header");
}

TEST(DatasetLoaderTest, ThreadsOptionGivesTheSameDataset) {
  const std::string dir = testing::SharedDataDir("bibtex");
  if (dir.empty()) GTEST_SKIP() << "bibtex not found (set XMLT_DATA_DIR)";
  LoadOptions one, four;
  one.threads = 1;
  four.threads = 4;
  one.use_cache = four.use_cache = false;
  const Dataset a = LoadDataset(dir + "/train.txt", one);
  const Dataset b = LoadDataset(dir + "/train.txt", four);
  EXPECT_EQ(Vec(a.features.row_ptr), Vec(b.features.row_ptr));
  EXPECT_EQ(Vec(a.features.col_idx), Vec(b.features.col_idx));
  EXPECT_EQ(Vec(a.features.values), Vec(b.features.values));
  EXPECT_EQ(Vec(a.labels.row_ptr), Vec(b.labels.row_ptr));
  EXPECT_EQ(Vec(a.labels.col_idx), Vec(b.labels.col_idx));
}

TEST(DatasetLoaderTest, RealDataThroughTheCache) {
  const std::string data = testing::SharedDataDir("amazon670k-sample");
  if (data.empty()) GTEST_SKIP() << "amazon670k-sample not found (set XMLT_DATA_DIR)";
  // The text is copied to a temp dir so that no cache is written beside the shared data.
  const testing::TempDir dir;
  fs::copy_file(data + "/amazon_sample.txt", dir.File("a.txt"));
  const Dataset text = LoadDataset(dir.File("a.txt"));
  WriteBinaryCache(text, CachePathFor(dir.File("a.txt")), false, StampSource(dir.File("a.txt")));
  const Dataset cached = LoadDataset(dir.File("a.txt"));
  EXPECT_EQ(cached.source, CachePathFor(dir.File("a.txt")));
  EXPECT_EQ(cached.num_rows(), 512u);
  EXPECT_EQ(cached.num_labels(), 670091u);
  EXPECT_EQ(Vec(cached.features.col_idx), Vec(text.features.col_idx));
  EXPECT_EQ(Vec(cached.features.values), Vec(text.features.values));
  EXPECT_EQ(Vec(cached.labels.col_idx), Vec(text.labels.col_idx));
  EXPECT_EQ(cached.warnings, text.warnings);  // the header mismatch survives the cache
}

}  // namespace
}  // namespace xmlt::data
