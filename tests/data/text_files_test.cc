// Tests of the text reader and writer on whole files: the same rows and the first error whatever
// the thread count, split matrix files, the writer's round trips, and the real datasets when present.
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "data/dataset_loader.h"
#include "data/input_error.h"
#include "data/text_reader.h"
#include "data/text_writer.h"
#include "tests/data/text_test_support.h"
#include "tests/test_support.h"

namespace xmlt::data {
namespace {

using text_test::ExpectError;
using text_test::ExpectSameDataset;
using text_test::Parse;
using text_test::Vec;

// A few MB of rows with unsorted and repeated ids, long enough to be cut into many chunks.
std::string RandomText(uint64_t rows, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::string text = std::to_string(rows) + " 1000 300\n";
  for (uint64_t r = 0; r < rows; ++r) {
    const int labels = static_cast<int>(rng() % 4);
    if (labels == 0) text += ' ';
    for (int i = 0; i < labels; ++i) {
      if (i > 0) text += ',';
      text += std::to_string(rng() % 300);
    }
    const int features = static_cast<int>(rng() % 40);
    for (int i = 0; i < features; ++i) {
      text += ' ' + std::to_string(rng() % 1000) + ':' + std::to_string((rng() % 10000) / 100.0);
    }
    text += (r % 7 == 0) ? "\r\n" : "\n";
  }
  return text;
}

TEST(TextReaderTest, ReportsTheFirstErrorInFileOrderWhateverTheThreads) {
  // Errors far apart land in different chunks; the earlier one must win with any thread count.
  std::string text = RandomText(60000, 7);
  size_t line_start = 0;
  std::vector<size_t> starts;
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '\n') starts.push_back(i + 1);
  }
  line_start = starts[39999];  // line 40001
  text.insert(line_start, "0 1:bad ");
  text.insert(starts[19999], " 2000:1 ");  // line 20001, before the other: inserting shifts later
  for (int threads : {1, 2, 4, 0}) {
    LoadOptions options;
    options.threads = threads;
    ExpectError(text, 20001, "feature id 2000 out of range", options);
  }
}

TEST(TextReaderTest, SameResultForAnyThreadCount) {
  const std::string text = RandomText(50000, 3);
  ASSERT_GT(text.size(), size_t{1} << 20);
  LoadOptions one, four, all;
  one.threads = 1;
  four.threads = 4;
  const Dataset a = Parse(text, one);
  EXPECT_EQ(a.num_rows(), 50000u);
  ExpectSameDataset(a, Parse(text, four));
  ExpectSameDataset(a, Parse(text, all));
  EXPECT_EQ(a.warnings, Parse(text, four).warnings);
}

TEST(TextReaderTest, SplitMatrixFiles) {
  std::vector<std::string> warnings;
  const CsrMatrix x =
      ParseSplitMatrixText("3 6\n0:1 5:2\n\n2:0.5 1:1\n", "x.txt", {}, false, &warnings);
  EXPECT_EQ(x.num_rows, 3u);
  EXPECT_EQ(x.num_cols, 6u);
  EXPECT_EQ(Vec(x.row_ptr), (std::vector<uint64_t>{0, 2, 2, 4}));
  EXPECT_EQ(Vec(x.col_idx), (std::vector<uint32_t>{0, 5, 1, 2}));
  EXPECT_EQ(Vec(x.values), (std::vector<float>{1, 2, 1, 0.5f}));
  EXPECT_TRUE(warnings.empty());

  const CsrMatrix y = ParseSplitMatrixText("4 3\n0:1 2:1\n1:1 1:1\n", "y.txt", {}, true, &warnings);
  EXPECT_TRUE(y.binary());
  EXPECT_EQ(Vec(y.col_idx), (std::vector<uint32_t>{0, 2, 1}));
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(warnings[0].find("y.txt: the header declares 4 rows but the file has 2"),
            std::string::npos);

  auto expect_split_error = [](const std::string& text, uint64_t line, const std::string& what) {
    try {
      ParseSplitMatrixText(text, "y.txt", {}, true, nullptr);
      ADD_FAILURE() << "no error for " << text;
    } catch (const InputError& e) {
      EXPECT_EQ(e.line(), line) << e.what();
      EXPECT_NE(std::string(e.what()).find(what), std::string::npos) << e.what();
    }
  };
  expect_split_error("2 3\n0:1\n1:abc\n", 3, "invalid value");  // label values are validated
  // A Y file's columns are labels, and its errors say so (reliability, second round, row 11).
  expect_split_error("2 3\n0:1\n3:1\n", 3, "label id 3 out of range (the header declares 3 labels");
  expect_split_error("2 3 4\n0:1\n", 1, "malformed header");
  expect_split_error("", 0, "empty file");
}

TEST(TextWriterTest, RoundTripsThroughText) {
  const testing::TempDir dir;
  const Dataset original = Parse(RandomText(3000, 11));
  WriteXmlRepoText(original, dir.File("out.txt"));
  const std::string written = testing::ReadFile(dir.File("out.txt"));
  EXPECT_EQ(written.rfind("3000 1000 300\n", 0), 0u);
  const Dataset again = Parse(written);
  ExpectSameDataset(original, again);
  EXPECT_TRUE(again.warnings.empty());
}

TEST(TextWriterTest, RoundTripsRowsWithNothingAtTheEnd) {
  const testing::TempDir dir;
  const Dataset d = Parse("4 4 2\n\n0 1:1\n\n\n");
  ASSERT_EQ(d.num_rows(), 4u);
  WriteXmlRepoText(d, dir.File("e.txt"));
  const Dataset again = Parse(testing::ReadFile(dir.File("e.txt")));
  ExpectSameDataset(d, again);
  EXPECT_TRUE(again.warnings.empty());
}

TEST(TextWriterTest, RoundTripsArbitraryFloats) {
  const testing::TempDir dir;
  const Dataset d = Parse("2 4 2\n0 0:0.1 1:3.4028235e38 2:1e-30 3:-0.333333343\n 1:7\n");
  WriteXmlRepoText(d, dir.File("f.txt"));
  ExpectSameDataset(d, Parse(testing::ReadFile(dir.File("f.txt"))));
}

// Real datasets from ../shared/data (or $XMLT_DATA_DIR) when present.
class RealDataTest : public ::testing::Test {
 protected:
  std::string Dir(const std::string& name) {
    const std::string dir = testing::SharedDataDir(name);
    return dir;
  }
};

TEST_F(RealDataTest, Bibtex) {
  const std::string dir = Dir("bibtex");
  if (dir.empty()) GTEST_SKIP() << "bibtex not found (set XMLT_DATA_DIR)";
  LoadOptions options;
  options.use_cache = false;
  const Dataset train = LoadDataset(dir + "/train.txt", options);
  EXPECT_EQ(train.num_rows(), 4880u);
  EXPECT_EQ(train.num_features(), 1836u);
  EXPECT_EQ(train.num_labels(), 159u);
  EXPECT_TRUE(train.warnings.empty());
  EXPECT_NEAR(static_cast<double>(train.features.nnz()) / train.num_rows(), 69, 5);
  const Dataset test = LoadDataset(dir + "/test.txt", options);
  EXPECT_EQ(test.num_rows(), 2515u);
}

TEST_F(RealDataTest, DeliciousHasRowsWithoutLabels) {
  const std::string dir = Dir("delicious");
  if (dir.empty()) GTEST_SKIP() << "delicious not found (set XMLT_DATA_DIR)";
  LoadOptions options;
  options.use_cache = false;
  uint64_t without_labels = 0;
  for (const char* name : {"/train.txt", "/test.txt"}) {
    const Dataset d = LoadDataset(dir + name, options);
    EXPECT_EQ(d.num_features(), 500u);
    EXPECT_EQ(d.num_labels(), 983u);
    EXPECT_TRUE(d.warnings.empty());
    for (uint64_t r = 0; r < d.num_rows(); ++r) without_labels += d.labels.RowSize(r) == 0;
    if (std::string(name) == "/train.txt") {
      EXPECT_EQ(d.num_rows(), 12920u);
    } else {
      EXPECT_EQ(d.num_rows(), 3185u);
    }
  }
  EXPECT_EQ(without_labels, 14u);  // as the README says
}

TEST_F(RealDataTest, AmazonSampleWarnsAboutItsHeader) {
  const std::string dir = Dir("amazon670k-sample");
  if (dir.empty()) GTEST_SKIP() << "amazon670k-sample not found (set XMLT_DATA_DIR)";
  LoadOptions options;
  options.use_cache = false;
  const Dataset d = LoadDataset(dir + "/amazon_sample.txt", options);  // CRLF lines
  EXPECT_EQ(d.num_rows(), 512u);
  EXPECT_EQ(d.num_features(), 135909u);
  EXPECT_EQ(d.num_labels(), 670091u);
  ASSERT_EQ(d.warnings.size(), 1u);
  EXPECT_NE(d.warnings[0].find("amazon_sample.txt: the header declares 153025 rows"),
            std::string::npos)
      << d.warnings[0];
}

}  // namespace
}  // namespace xmlt::data
