// Tests of the text parsers and writer: every supported layout, every rejected input with its exact
// line, warnings, determinism across thread counts, and the real datasets when present.
#include "data/text_reader.h"

#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "data/dataset_loader.h"
#include "data/input_error.h"
#include "data/text_writer.h"
#include "tests/test_support.h"

namespace xmlt::data {
namespace {

template <class T>
std::vector<T> Vec(const SharedArray<T>& a) {
  return std::vector<T>(a.begin(), a.end());
}

std::vector<uint32_t> RowIds(const CsrMatrix& m, uint64_t r) {
  return std::vector<uint32_t>(m.col_idx.begin() + m.RowBegin(r), m.col_idx.begin() + m.RowEnd(r));
}

std::vector<float> RowValues(const CsrMatrix& m, uint64_t r) {
  return std::vector<float>(m.values.begin() + m.RowBegin(r), m.values.begin() + m.RowEnd(r));
}

Dataset Parse(const std::string& text, LoadOptions options = {}) {
  return ParseLabeledText(text, "t.txt", options);
}

// Expects InputError at `line` whose message contains `fragment`.
void ExpectError(const std::string& text, uint64_t line, const std::string& fragment,
                 LoadOptions options = {}) {
  try {
    Parse(text, options);
    ADD_FAILURE() << "no error for: " << text.substr(0, 80);
  } catch (const InputError& e) {
    EXPECT_EQ(e.line(), line) << e.what();
    EXPECT_EQ(e.file(), "t.txt");
    EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
    if (line > 0) {
      EXPECT_EQ(std::string(e.what()).rfind("t.txt:" + std::to_string(line) + ": ", 0), 0u)
          << e.what();
    }
  }
}

void ExpectSameDataset(const Dataset& a, const Dataset& b) {
  EXPECT_EQ(a.num_rows(), b.num_rows());
  EXPECT_EQ(a.num_features(), b.num_features());
  EXPECT_EQ(a.num_labels(), b.num_labels());
  EXPECT_EQ(Vec(a.features.row_ptr), Vec(b.features.row_ptr));
  EXPECT_EQ(Vec(a.features.col_idx), Vec(b.features.col_idx));
  EXPECT_EQ(Vec(a.features.values), Vec(b.features.values));
  EXPECT_EQ(Vec(a.labels.row_ptr), Vec(b.labels.row_ptr));
  EXPECT_EQ(Vec(a.labels.col_idx), Vec(b.labels.col_idx));
  EXPECT_TRUE(a.labels.values.empty());
  EXPECT_TRUE(b.labels.values.empty());
}

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

TEST(TextReaderTest, ParsesXmlRepoRows) {
  const Dataset d = Parse("3 5 4\n0,2 0:1.5 3:2\n 1:1\n3 \n");
  ASSERT_EQ(d.num_rows(), 3u);
  EXPECT_EQ(d.num_features(), 5u);
  EXPECT_EQ(d.num_labels(), 4u);
  EXPECT_EQ(Vec(d.features.row_ptr), (std::vector<uint64_t>{0, 2, 3, 3}));
  EXPECT_EQ(Vec(d.features.col_idx), (std::vector<uint32_t>{0, 3, 1}));
  EXPECT_EQ(Vec(d.features.values), (std::vector<float>{1.5f, 2.0f, 1.0f}));
  EXPECT_EQ(Vec(d.labels.row_ptr), (std::vector<uint64_t>{0, 2, 2, 3}));
  EXPECT_EQ(Vec(d.labels.col_idx), (std::vector<uint32_t>{0, 2, 3}));
  EXPECT_TRUE(d.labels.binary());
  EXPECT_TRUE(d.warnings.empty());
  EXPECT_EQ(d.source, "t.txt");
}

TEST(TextReaderTest, FirstTokenWithColonMeansNoLabels) {
  const Dataset d = Parse("2 5 4\n1:2 3:4\n0\t2:1\t\n");
  EXPECT_EQ(RowIds(d.labels, 0), std::vector<uint32_t>{});
  EXPECT_EQ(RowIds(d.features, 0), (std::vector<uint32_t>{1, 3}));
  EXPECT_EQ(RowIds(d.labels, 1), std::vector<uint32_t>{0});
  EXPECT_EQ(RowIds(d.features, 1), std::vector<uint32_t>{2});
}

TEST(TextReaderTest, ParsesLibsvmWithoutHeader) {
  for (TextFormat format : {TextFormat::kAuto, TextFormat::kLibsvm}) {
    LoadOptions options;
    options.format = format;
    const Dataset d = Parse("1,3 0:1 7:2\n2 4:-1e-3\n 1:1\n", options);
    ASSERT_EQ(d.num_rows(), 3u);
    EXPECT_EQ(d.num_features(), 8u);  // max id + 1
    EXPECT_EQ(d.num_labels(), 4u);
    EXPECT_EQ(RowValues(d.features, 1), std::vector<float>{-1e-3f});
  }
}

TEST(TextReaderTest, AutoDetectsHeaderOnlyForThreeIntegers) {
  EXPECT_EQ(Parse("1 2 3\n").num_rows(), 0u);  // a header and no rows
  EXPECT_EQ(Parse("1 2 3\n").num_labels(), 3u);
  // Two or four integers cannot be a row: a header with the wrong count (reliability, second
  // round, row 11). One integer is a row with one label and no features.
  ExpectError("1 2\n0 1:1\n", 1, "malformed header: expected 'N D L' (three non-negative integers), got 2 numbers: '1 2'");
  ExpectError("10 20 30 40\n0 1:1\n", 1, "got 4 numbers");
  EXPECT_EQ(Parse("1\n0 1:1\n").num_rows(), 2u);
  LoadOptions xml;
  xml.format = TextFormat::kXmlRepo;
  ExpectError("0 1:1\n", 1, "malformed header", xml);
  ExpectError("1 2 3 4\n0 1:1\n", 1, "malformed header", xml);
  LoadOptions libsvm;
  libsvm.format = TextFormat::kLibsvm;
  ExpectError("1 2 3\n0 1:1\n", 1, "feature token '2' has no ':value'", libsvm);
}

// Issue: reliability, second round, row 15: a header far above what the rows use is warned about.
TEST(TextReaderTest, AHeaderFarAboveTheIdsInUseIsWarnedAbout) {
  const Dataset big = Parse("2 10000000 5\n0 1:1\n1 2:1\n");
  ASSERT_EQ(big.warnings.size(), 1u);
  EXPECT_NE(big.warnings[0].find("declares 10000000 features but the rows use ids below 3"), std::string::npos)
      << big.warnings[0];
  EXPECT_TRUE(Parse("2 99999 5\n0 1:1\n1 2:1\n").warnings.empty());  // small sizes cost nothing
  EXPECT_TRUE(Parse("2 160000 5\n0 1:1\n1 10000:1\n").warnings.empty());
}

TEST(TextReaderTest, CrlfFinalLineAndTrailingBlankLines) {
  const Dataset lf = Parse("3 3 2\n0 1:1\n1 2:0.5\n 0:2\n");
  ExpectSameDataset(lf, Parse("3 3 2\r\n0 1:1\r\n1 2:0.5\r\n 0:2\r\n"));
  ExpectSameDataset(lf, Parse("3 3 2\n0 1:1\n1 2:0.5\n 0:2"));  // no final newline
  ExpectSameDataset(lf, Parse("3 3 2\n0 1:1 \t\n1 2:0.5  \n 0:2\n\n \n\r\n\n"));
  EXPECT_TRUE(Parse("3 3 2\n0 1:1\n1 2:0.5\n 0:2\n\n\n").warnings.empty());
}

TEST(TextReaderTest, EmptyLineInsideTheBodyIsARowWithNothing) {
  const Dataset d = Parse("3 3 2\n0 1:1\n\n1 2:1\n");
  ASSERT_EQ(d.num_rows(), 3u);
  EXPECT_EQ(d.features.RowSize(1), 0u);
  EXPECT_EQ(d.labels.RowSize(1), 0u);
}

TEST(TextReaderTest, TrailingBlankLinesAreEmptyRowsOnlyWhenTheHeaderNeedsThem) {
  const Dataset padded = Parse("3 3 2\n0 1:1\n\n\n\n");
  EXPECT_EQ(padded.num_rows(), 3u);
  EXPECT_EQ(Vec(padded.features.row_ptr), (std::vector<uint64_t>{0, 1, 1, 1}));
  EXPECT_EQ(Vec(padded.labels.row_ptr), (std::vector<uint64_t>{0, 1, 1, 1}));
  EXPECT_TRUE(padded.warnings.empty());
  EXPECT_EQ(Parse("1 3 2\n0 1:1\n\n\n").num_rows(), 1u);
  EXPECT_EQ(Parse("2 3 2\n\n").num_rows(), 1u);      // one blank line, one row short: warned
  EXPECT_EQ(Parse("0,1 1:1\n\n\n").num_rows(), 1u);  // no header: nothing to pad for
}

TEST(TextReaderTest, RowsWithoutFeatures) {
  const Dataset d = Parse("2 3 5\n1,4\n2\n");
  EXPECT_EQ(d.features.nnz(), 0u);
  EXPECT_EQ(Vec(d.labels.col_idx), (std::vector<uint32_t>{1, 4, 2}));
}

TEST(TextReaderTest, HeaderRowCountMismatchWarnsAndTrustsTheBody) {
  const Dataset d = Parse("5 3 2\n0 1:1\n1 0:1\n");
  EXPECT_EQ(d.num_rows(), 2u);
  ASSERT_EQ(d.warnings.size(), 1u);
  EXPECT_NE(d.warnings[0].find("t.txt"), std::string::npos) << d.warnings[0];
  EXPECT_NE(d.warnings[0].find("declares 5 rows but the file has 2"), std::string::npos);
  EXPECT_EQ(Parse("1 3 2\n0 1:1\n1 0:1\n").num_rows(), 2u);
  // An absurd row count is only a warning: nothing is sized from it.
  const Dataset huge = Parse("1000000000000000000 3 2\n0 1:1\n\n");
  EXPECT_EQ(huge.num_rows(), 2u);
  EXPECT_EQ(huge.warnings.size(), 1u);
}

TEST(TextReaderTest, SortsIdsSumsRepeatedFeaturesAndKeepsOneLabel) {
  const Dataset d = Parse("3 10 10\n5,1,5 7:1 2:2 7:0.5\n0 1:1\n9,9 4:1 4:1 3:1\n");
  EXPECT_EQ(RowIds(d.labels, 0), (std::vector<uint32_t>{1, 5}));
  EXPECT_EQ(RowIds(d.features, 0), (std::vector<uint32_t>{2, 7}));
  EXPECT_EQ(RowValues(d.features, 0), (std::vector<float>{2.0f, 1.5f}));
  EXPECT_EQ(RowIds(d.labels, 2), std::vector<uint32_t>{9});
  EXPECT_EQ(RowValues(d.features, 2), (std::vector<float>{1.0f, 2.0f}));
  ASSERT_EQ(d.warnings.size(), 1u);  // one per file, at the first line
  EXPECT_EQ(d.warnings[0].rfind("t.txt:2: repeated feature ids", 0), 0u) << d.warnings[0];
}

TEST(TextReaderTest, OneBasedIds) {
  LoadOptions options;
  options.one_based = true;
  const Dataset d = Parse("2 3 2\n1,2 1:1 3:2\n2 2:1\n", options);
  EXPECT_EQ(RowIds(d.labels, 0), (std::vector<uint32_t>{0, 1}));
  EXPECT_EQ(RowIds(d.features, 0), (std::vector<uint32_t>{0, 2}));
  ExpectError("2 3 2\n1 1:1\n2 0:1\n", 3, "feature id 0 in a one-based file", options);
  ExpectError("2 3 2\n1 1:1\n0 1:1\n", 3, "label id 0 in a one-based file", options);
  ExpectError("1 3 2\n1 4:1\n", 2, "feature id 4 out of range", options);
  const Dataset inferred = Parse("1,3 2:1\n", [] {
    LoadOptions o;
    o.one_based = true;
    return o;
  }());
  EXPECT_EQ(inferred.num_labels(), 3u);
  EXPECT_EQ(inferred.num_features(), 2u);
}

TEST(TextReaderTest, RejectsBadTokensAtTheirLine) {
  const std::string head = "4 10 5\n0 1:1\n1 2:2\n";  // lines 1-3 are fine
  ExpectError(head + "0 abc\n", 4, "invalid feature token 'abc'");
  ExpectError(head + "0 3:x\n", 4, "invalid value in '3:x'");
  ExpectError(head + "0 3:1.5x\n", 4, "invalid value in '3:1.5x'");
  // One sign at most: a plus sign, which from_chars does not take, is skipped, and must not let a
  // minus sign through after it.
  ExpectError(head + "0 3:+-3\n", 4, "invalid value in '3:+-3'");
  ExpectError(head + "0 3:++3\n", 4, "invalid value in '3:++3'");
  EXPECT_EQ(RowValues(Parse(head + "0 3:+3\n").features, 2), std::vector<float>{3.0f});
  ExpectError(head + "x 3:1\n", 4, "invalid label list 'x'");
  // Only a comma follows a label id: "1x" and "1;2" are no label lists.
  ExpectError(head + "1x 3:1\n", 4, "invalid label list '1x'");
  ExpectError(head + "1;2 3:2\n", 4, "invalid label list '1;2'");
  ExpectError(head + "1,2x 3:1\n", 4, "invalid label list '1,2x'");
  ExpectError(head + "0 10:1\n", 4, "feature id 10 out of range");
  ExpectError(head + "5 1:1\n", 4, "label id 5 out of range");
  ExpectError(head + "0 -1:1\n", 4, "negative feature id");
  ExpectError(head + "-1 1:1\n", 4, "negative label id");
  ExpectError(head + "0 1:nan\n", 4, "NaN or infinite");
  ExpectError(head + "0 1:-inf\n", 4, "NaN or infinite");
  ExpectError(head + "0 1:1e50\n", 4, "out of float range");
  ExpectError(head + "0 5:\n", 4, "'5:' has no value");
  ExpectError(head + "0 5: 1:1\n", 4, "'5:' has no value");
  ExpectError(head + "0 :3\n", 4, "':3' has no id");
  ExpectError(head + "0 5\n", 4, "'5' has no ':value'");
  ExpectError(head + "1,2, 3:1\n", 4, "label list '1,2,' ends with ','");
  ExpectError(head + "1,,2 3:1\n", 4, "empty label id");
  ExpectError(head + "0 99999999999:1\n", 4, "exceeds 2^32-1");
  ExpectError(head + "0 1:1" + std::string(1, '\0') + "\n", 4, "binary data (byte 0x00)");
  ExpectError(head + std::string("\x01\x02 1:1\n"), 4, "binary data (byte 0x01)");
  // Bytes above 0x7f are not text either (row 11: they read as an "invalid label list").
  ExpectError(head + std::string("\xb9\x13\xfe 1:1\n"), 4, "binary data (byte 0xb9)");
  ExpectError(head + "0 1:1 2" + std::string(1, '\x7f') + ":1\n", 4, "binary data");
}

TEST(TextReaderTest, RejectsBadFiles) {
  ExpectError("", 0, "empty file");
  ExpectError("\n \n\r\n", 0, "empty file");
  ExpectError("1 5000000000 3\n0 1:1\n", 1, "exceeds 2^32-1");
  ExpectError("1 5 99999999999999999999999\n0 1:1\n", 1, "exceeds 2^32-1");
  ExpectError(std::string("\0\0\0\0", 4), 1, "binary data");
}

// Found by fuzzing: without a header the count is the largest id + 1, so id 2^32-1 made a count of
// 2^32, which neither the .xmlb cache nor the model accepts.
TEST(TextReaderTest, IdsWithoutAHeaderKeepTheirCountWithin32Bits) {
  ExpectError("4294967295:1\n", 1, "feature id 4294967295 out of range (at most 2^32-1 features");
  LoadOptions libsvm;
  libsvm.format = TextFormat::kLibsvm;
  ExpectError("4294967295,4 1:1\n", 1, "label id 4294967295 out of range", libsvm);
  const Dataset largest = Parse("4294967294 4294967294:1\n", libsvm);
  EXPECT_EQ(largest.num_features(), 4294967295u);
  EXPECT_EQ(largest.num_labels(), 4294967295u);
  LoadOptions one_based = libsvm;
  one_based.one_based = true;
  EXPECT_EQ(Parse("4294967295 4294967295:1\n", one_based).num_features(), 4294967295u);
}

// Found by fuzzing: each value was range-checked alone, but the sum of a repeated id's values could
// reach infinity, which the cache reader then called corrupt.
TEST(TextReaderTest, RepeatedFeatureIdsWhoseSumOverflowsAreRejected) {
  ExpectError("2 3 1\n0 1:1\n0 1:3e38 2:1 1:3e38\n", 3,
              "the values of repeated feature id 1 sum beyond float range");
  LoadOptions one_based;
  one_based.one_based = true;
  ExpectError("1 3 1\n1 3:-3e38 3:-3e38\n", 2, "repeated feature id 3 sum", one_based);
  const Dataset cancelled = Parse("1 3 1\n0 1:3e38 1:-3e38 1:2\n");
  EXPECT_EQ(RowValues(cancelled.features, 0), std::vector<float>{2.0f});
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
