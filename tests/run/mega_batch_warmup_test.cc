// The mega-batch warm-up (run/mega_batch_work.h): one batch per device first, doubling each
// mega-batch, never above the full mega-batch, whatever the sizes.
#include <gtest/gtest.h>

#include <cstdint>
#include <limits>

#include "run/mega_batch_work.h"

namespace xmlt::run {
namespace {

TEST(MegaBatchWarmUp, StartsAtOneBatchPerDeviceAndDoublesUpToTheFullMegaBatch) {
  // Bibtex on four devices: 20 batches of 128 rows, the first mega-batch 4 batches.
  const uint64_t full = 20 * 128, first = 4 * 128;
  EXPECT_EQ(WarmUpMegaBatchRows(full, first, 1), 4u * 128);
  EXPECT_EQ(WarmUpMegaBatchRows(full, first, 2), 8u * 128);
  EXPECT_EQ(WarmUpMegaBatchRows(full, first, 3), 16u * 128);
  EXPECT_EQ(WarmUpMegaBatchRows(full, first, 4), full);
  EXPECT_EQ(WarmUpMegaBatchRows(full, first, 1000), full);
}

TEST(MegaBatchWarmUp, NeverExceedsTheFullMegaBatchNorOverflows) {
  const uint64_t huge = std::numeric_limits<uint64_t>::max() / 3;
  for (uint64_t index = 1; index <= 70; ++index) {
    EXPECT_LE(WarmUpMegaBatchRows(1000, 7, index), 1000u) << index;
    EXPECT_LE(WarmUpMegaBatchRows(huge, 3, index), huge) << index;
    EXPECT_GE(WarmUpMegaBatchRows(huge, 3, index), 3u) << index;
  }
  // A first mega-batch at or above the full one is the full one (a mega-batch of fewer batches
  // than devices is rounded up elsewhere; the warm-up only shortens).
  EXPECT_EQ(WarmUpMegaBatchRows(512, 512, 1), 512u);
  EXPECT_EQ(WarmUpMegaBatchRows(256, 512, 1), 256u);
  // Index 0 (no mega-batch yet) and an empty first size leave the full mega-batch.
  EXPECT_EQ(WarmUpMegaBatchRows(512, 128, 0), 512u);
  EXPECT_EQ(WarmUpMegaBatchRows(512, 0, 1), 512u);
}

}  // namespace
}  // namespace xmlt::run
