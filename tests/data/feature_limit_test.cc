// Cutting a dataset to a model's input size (issue: reliability, third round, row 12).
#include "data/feature_limit.h"

#include <gtest/gtest.h>

#include <vector>

#include "data/row_normalization.h"
#include "tests/make_dataset.h"

namespace xmlt::data {
namespace {

using xmlt::testing::MakeDataset;

TEST(FeatureLimit, EntriesAtOrAboveTheLimitAreDroppedAndCounted) {
  const Dataset wide = MakeDataset({{{{0, 3.f}, {5, 4.f}, {7, 9.f}}, {1}},  // 5 and 7 go
                                    {{{1, 1.f}, {2, 2.f}}, {0}},           // fits
                                    {{{4, 6.f}}, {}}},                     // fits (4 < 5)
                                   8, 2);
  const FeatureLimit limited = LimitFeatures(wide, 5);
  EXPECT_EQ(limited.dropped, 2u);
  EXPECT_EQ(limited.rows_touched, 1u);
  const CsrMatrix& x = limited.dataset.features;
  EXPECT_EQ(x.num_cols, 5u);
  EXPECT_EQ(std::vector<uint64_t>(x.row_ptr.begin(), x.row_ptr.end()), (std::vector<uint64_t>{0, 1, 3, 4}));
  EXPECT_EQ(std::vector<uint32_t>(x.col_idx.begin(), x.col_idx.end()), (std::vector<uint32_t>{0, 1, 2, 4}));
  EXPECT_EQ(std::vector<float>(x.values.begin(), x.values.end()), (std::vector<float>{3.f, 1.f, 2.f, 6.f}));
  EXPECT_EQ(limited.dataset.labels.col_idx.data(), wide.labels.col_idx.data());  // labels shared, not copied
  // Normalized after the cut, the first row is (1, 0, ...): 5 and 7 no longer count in its norm.
  EXPECT_FLOAT_EQ(NormalizeRowsL2(limited.dataset).features.values[0], 1.f);
}

TEST(FeatureLimit, ADatasetThatFitsIsSharedUnchanged) {
  const Dataset narrow = MakeDataset({{{{0, 1.f}, {3, 2.f}}, {0}}}, 4, 1);
  const FeatureLimit limited = LimitFeatures(narrow, 4);
  EXPECT_EQ(limited.dropped, 0u);
  EXPECT_EQ(limited.dataset.features.col_idx.data(), narrow.features.col_idx.data());
  EXPECT_EQ(limited.dataset.features.num_cols, 4u);
}

}  // namespace
}  // namespace xmlt::data
