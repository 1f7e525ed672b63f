// Tests of the text parsers on rows: every supported layout, every rejected input with its exact
// line, and warnings. Whole files (thread counts, split files, the writer, the real datasets) are
// text_files_test.cc's.
#include "data/text_reader.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "data/dataset_loader.h"
#include "tests/data/text_test_support.h"

namespace xmlt::data {
namespace {

using text_test::ExpectError;
using text_test::ExpectSameDataset;
using text_test::Parse;
using text_test::Vec;

std::vector<uint32_t> RowIds(const CsrMatrix& m, uint64_t r) {
  return std::vector<uint32_t>(m.col_idx.begin() + m.RowBegin(r), m.col_idx.begin() + m.RowEnd(r));
}

std::vector<float> RowValues(const CsrMatrix& m, uint64_t r) {
  return std::vector<float>(m.values.begin() + m.RowBegin(r), m.values.begin() + m.RowEnd(r));
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

}  // namespace
}  // namespace xmlt::data
