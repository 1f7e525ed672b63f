// The readers' form of a row, shared by the text readers and the CSR arrays from memory: these rules
// are what makes a row read from text and the same row handed in from Python train alike.
#include "data/canonical_row.h"

#include <gtest/gtest.h>

#include <limits>
#include <vector>

namespace xmlt::data {
namespace {

std::vector<uint32_t> Ids(const std::vector<FeatureEntry>& row, size_t size) {
  std::vector<uint32_t> ids;
  for (size_t i = 0; i < size; ++i) ids.push_back(row[i].id);
  return ids;
}

std::vector<float> Values(const std::vector<FeatureEntry>& row, size_t size) {
  std::vector<float> values;
  for (size_t i = 0; i < size; ++i) values.push_back(row[i].value);
  return values;
}

SummedFeatures Sum(std::vector<FeatureEntry>& row) { return SortAndSumFeatures(row.data(), row.data() + row.size()); }

std::vector<uint32_t> Dedup(std::vector<uint32_t> labels) {
  labels.resize(SortAndDedupLabels(labels.data(), labels.data() + labels.size()));
  return labels;
}

TEST(CanonicalRow, UnsortedFeaturesAreSortedWithTheirValues) {
  std::vector<FeatureEntry> row = {{3, 0.3f}, {0, 0.5f}, {2, 0.2f}};
  const SummedFeatures summed = Sum(row);
  EXPECT_FALSE(summed.summed);
  EXPECT_FALSE(summed.out_of_range);
  ASSERT_EQ(summed.size, 3u);
  EXPECT_EQ(Ids(row, summed.size), (std::vector<uint32_t>{0, 2, 3}));
  EXPECT_EQ(Values(row, summed.size), (std::vector<float>{0.5f, 0.2f, 0.3f}));
}

TEST(CanonicalRow, SortedFeaturesAreLeftAsTheyAre) {
  std::vector<FeatureEntry> row = {{1, 0.5f}, {4, 2.f}, {9, -1.f}};
  const SummedFeatures summed = Sum(row);
  EXPECT_FALSE(summed.summed);
  ASSERT_EQ(summed.size, 3u);
  EXPECT_EQ(Ids(row, summed.size), (std::vector<uint32_t>{1, 4, 9}));
  EXPECT_EQ(Values(row, summed.size), (std::vector<float>{0.5f, 2.f, -1.f}));
}

// In input order: (1e8 + 1) - 1e8 is 0 in floats (1 is below 1e8's precision); any other order
// would give 1. A row read from text and the same row from memory must give the same bits.
TEST(CanonicalRow, RepeatedFeatureIdsAreSummedInInputOrder) {
  std::vector<FeatureEntry> row = {{5, 1e8f}, {1, 1.f}, {5, 1.f}, {0, 2.f}, {5, -1e8f}, {1, 0.5f}};
  const SummedFeatures summed = Sum(row);
  EXPECT_TRUE(summed.summed);
  EXPECT_FALSE(summed.out_of_range);
  ASSERT_EQ(summed.size, 3u);
  EXPECT_EQ(Ids(row, summed.size), (std::vector<uint32_t>{0, 1, 5}));
  EXPECT_EQ(Values(row, summed.size), (std::vector<float>{2.f, 1.5f, 0.f}));
}

TEST(CanonicalRow, AnEmptyRowStaysEmpty) {
  const SummedFeatures summed = SortAndSumFeatures(nullptr, nullptr);
  EXPECT_EQ(summed.size, 0u);
  EXPECT_FALSE(summed.summed);
  EXPECT_FALSE(summed.out_of_range);
  EXPECT_EQ(SortAndDedupLabels(nullptr, nullptr), 0u);
  std::vector<FeatureEntry> one = {{7, 1.f}};
  EXPECT_EQ(Sum(one).size, 1u);
}

TEST(CanonicalRow, LabelsAreSortedAndKeptOnce) {
  EXPECT_EQ(Dedup({2, 0, 2, 1, 0}), (std::vector<uint32_t>{0, 1, 2}));
  EXPECT_EQ(Dedup({4, 1}), (std::vector<uint32_t>{1, 4}));
  EXPECT_EQ(Dedup({3, 3}), (std::vector<uint32_t>{3}));
  EXPECT_EQ(Dedup({0, 5, 6}), (std::vector<uint32_t>{0, 5, 6}));
  EXPECT_EQ(Dedup({}), (std::vector<uint32_t>{}));
}

// Each value was checked alone; their sum may still leave the float range, which the row refuses.
TEST(CanonicalRow, ASumBeyondFloatRangeIsRefusedNamingTheId) {
  const float big = std::numeric_limits<float>::max();
  std::vector<FeatureEntry> row = {{1, big}, {0, 1.f}, {1, big}};
  SummedFeatures summed = Sum(row);
  EXPECT_TRUE(summed.out_of_range);
  EXPECT_EQ(summed.out_of_range_id, 1u);
  EXPECT_FALSE(summed.summed);  // no repeated id was summed before the one that failed

  // Negative too; an id summed before the failure is still reported, for the readers' warning.
  row = {{3, -big}, {2, 1.f}, {3, -big}, {2, 1.f}};
  summed = Sum(row);
  EXPECT_TRUE(summed.out_of_range);
  EXPECT_EQ(summed.out_of_range_id, 3u);
  EXPECT_TRUE(summed.summed);

  // The sum is checked as it goes, so a total that would come back into range is refused all the same.
  row = {{1, 3e38f}, {1, 3e38f}, {1, -3e38f}};
  summed = Sum(row);
  EXPECT_TRUE(summed.out_of_range);
  EXPECT_EQ(summed.out_of_range_id, 1u);

  // Large values that cancel in order stay in range.
  row = {{1, 3e38f}, {1, -3e38f}, {1, 2.f}};
  summed = Sum(row);
  EXPECT_FALSE(summed.out_of_range);
  ASSERT_EQ(summed.size, 1u);
  EXPECT_EQ(row[0].value, 2.f);
}

TEST(CanonicalRow, TheRefusalIsSpelledOnceForBothPaths) {
  EXPECT_EQ(RepeatedFeatureSumProblem(7), "the values of repeated feature id 7 sum beyond float range");
}

}  // namespace
}  // namespace xmlt::data
