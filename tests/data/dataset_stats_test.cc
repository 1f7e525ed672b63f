// Tests of the dataset statistics and their report.
#include "data/dataset_stats.h"

#include <gtest/gtest.h>

#include "data/text_reader.h"

namespace xmlt::data {
namespace {

TEST(DatasetStatsTest, ComputesSizesAndDistributions) {
  // Labels used: 0 x3, 2 x1, 4 x2; 1, 3, 5 never. Row 2 has no labels, row 3 no features.
  const Dataset d =
      ParseLabeledText("4 8 6\n0,4 1:1 2:1\n0 3:1\n 1:1 5:1 7:1\n0,2,4\n", "s.txt", {});
  const DatasetStats s = ComputeStats(d, 2);
  EXPECT_EQ(s.rows, 4u);
  EXPECT_EQ(s.features, 8u);
  EXPECT_EQ(s.labels, 6u);
  EXPECT_EQ(s.feature_nnz, 6u);
  EXPECT_EQ(s.label_nnz, 6u);
  EXPECT_EQ(s.rows_without_labels, 1u);
  EXPECT_EQ(s.rows_without_features, 1u);
  EXPECT_EQ(s.labels_never_used, 3u);
  EXPECT_DOUBLE_EQ(s.nnz_per_row.min, 0);
  EXPECT_DOUBLE_EQ(s.nnz_per_row.mean, 1.5);
  EXPECT_DOUBLE_EQ(s.nnz_per_row.max, 3);
  EXPECT_DOUBLE_EQ(s.labels_per_row.min, 0);
  EXPECT_DOUBLE_EQ(s.labels_per_row.mean, 1.5);
  EXPECT_DOUBLE_EQ(s.labels_per_row.max, 3);
  using Counts = std::vector<std::pair<uint32_t, uint64_t>>;
  EXPECT_EQ(s.most_frequent_labels, (Counts{{0, 3}, {4, 2}}));
  EXPECT_EQ(s.least_frequent_labels, (Counts{{2, 1}, {4, 2}}));
}

TEST(DatasetStatsTest, EmptyDataset) {
  const Dataset d = ParseLabeledText("0 3 2\n", "e.txt", {});
  const DatasetStats s = ComputeStats(d);
  EXPECT_EQ(s.rows, 0u);
  EXPECT_EQ(s.labels_never_used, 2u);
  EXPECT_TRUE(s.most_frequent_labels.empty());
  EXPECT_FALSE(FormatStats(s, d).empty());
}

TEST(DatasetStatsTest, ReportIsReadableAndCarriesTheWarnings) {
  const Dataset d = ParseLabeledText("9 8 6\n0,4 1:1 2:1\n0 3:1 3:1\n", "s.txt", {});
  ASSERT_EQ(d.warnings.size(), 2u);  // header row count, repeated feature
  const std::string report = FormatStats(ComputeStats(d), d);
  for (const char* expected :
       {"rows                    2\n", "features (D)            8\n",
        "labels (L)              6 (4 never used)\n",
        "features per row        min 1, mean 1.50, max 2\n",
        "most frequent labels    0 (2), 4 (1)\n", "least frequent labels   4 (1), 0 (2)\n",
        "warnings                2\n", "declares 9 rows", "s.txt:3: repeated feature ids"}) {
    EXPECT_NE(report.find(expected), std::string::npos) << expected << "\nin:\n" << report;
  }
}

}  // namespace
}  // namespace xmlt::data
