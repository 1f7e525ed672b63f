// SLIDE's preset by the output layer's size: the hash family, and where the padding is weighted.
#include "engine/sampled_output.h"

#include <gtest/gtest.h>

namespace xmlt::engine {
namespace {

TEST(SampledOutputPreset, HashFamilyFollowsSlidesPublishedSettings) {
  const SampledOutputOptions amazon = SampledOutputOptions::PresetFor(670091);
  EXPECT_EQ(amazon.hash, "dwta");
  EXPECT_EQ(amazon.k, 8u);
  EXPECT_EQ(amazon.l, 50u);
  const SampledOutputOptions delicious = SampledOutputOptions::PresetFor(205443);
  EXPECT_EQ(delicious.hash, "simhash");
  EXPECT_EQ(delicious.k, 9u);
}

TEST(SampledOutputPreset, PaddingIsWeightedUpToSixtyFourLabelsPerActiveLabel) {
  // The measured points: Delicious (983 labels, 200 active), EURLEX57K (4,108, 600), and the
  // Amazon-670K shape (670,091, 1,000), where the weighted softmax collapsed.
  EXPECT_TRUE(SampledOutputOptions::WeightPaddingFor(983, 200));
  EXPECT_TRUE(SampledOutputOptions::WeightPaddingFor(4108, 600));
  EXPECT_FALSE(SampledOutputOptions::WeightPaddingFor(670091, 1000));
  EXPECT_TRUE(SampledOutputOptions::WeightPaddingFor(6400, 100));
  EXPECT_FALSE(SampledOutputOptions::WeightPaddingFor(6401, 100));
  EXPECT_TRUE(SampledOutputOptions::WeightPaddingFor(64, 0));  // a minimum of 0 counts as 1
  EXPECT_FALSE(SampledOutputOptions::WeightPaddingFor(65, 0));
  // The preset applies it with its own minimum (1,000).
  EXPECT_TRUE(SampledOutputOptions::PresetFor(64000).weight_padding);
  EXPECT_FALSE(SampledOutputOptions::PresetFor(64001).weight_padding);
  EXPECT_FALSE(SampledOutputOptions::PresetFor(670091).weight_padding);
  EXPECT_TRUE(SampledOutputOptions::PresetFor(983).weight_padding);
}

}  // namespace
}  // namespace xmlt::engine
