// The presets' values: the default preset's rules at their edges, and the paper's section 5.1.
#include "apps/train_presets.h"

#include <gtest/gtest.h>

#include <cmath>
#include <stdexcept>

namespace xmlt::apps {
namespace {

TEST(TrainPresets, DefaultAveragingMergesScaleTheRateLinearlyWithoutGlobalMomentum) {
  for (const char* algo : {"adaptive", "elastic"}) {
    const PresetValues v = DefaultPreset(algo, 4, 39);  // Bibtex: 4,880 rows / 128
    EXPECT_EQ(v.momentum, 0.0) << algo;
    EXPECT_FLOAT_EQ(v.local_momentum, 0.9f) << algo;
    EXPECT_EQ(v.lr_scaling, LrScaling::kLinear) << algo;
    EXPECT_EQ(v.mega_batch, 20u) << algo;  // ceil(39 / 2)
    EXPECT_TRUE(v.pert_renormalize) << algo;
  }
}

TEST(TrainPresets, DefaultMegaBatchIsHalfAnEpochWithinDevicesAndOneHundred) {
  EXPECT_EQ(DefaultPreset("adaptive", 4, 101).mega_batch, 51u);   // Delicious
  EXPECT_EQ(DefaultPreset("adaptive", 4, 3832).mega_batch, 100u); // Amazon-670K
  EXPECT_EQ(DefaultPreset("adaptive", 8, 5).mega_batch, 8u);      // at least a batch per device
  EXPECT_EQ(DefaultPreset("elastic", 1, 1).mega_batch, 1u);
  EXPECT_EQ(DefaultPreset("adaptive", 4, 200).mega_batch, 100u);
  EXPECT_EQ(DefaultPreset("adaptive", 4, 199).mega_batch, 100u);
  EXPECT_EQ(DefaultPreset("adaptive", 4, 198).mega_batch, 99u);
}

TEST(TrainPresets, DefaultSyncIsOneDevicesOptimizerAndAdasumCombinesEveryBatch) {
  const PresetValues sync = DefaultPreset("sync", 4, 39);
  EXPECT_EQ(sync.momentum, 0.9);
  EXPECT_FLOAT_EQ(sync.local_momentum, 0.0f);
  EXPECT_EQ(sync.lr_scaling, LrScaling::kNone);
  const PresetValues adasum = DefaultPreset("adasum", 4, 101);
  EXPECT_EQ(adasum.momentum, 0.9);
  EXPECT_FLOAT_EQ(adasum.local_momentum, 0.0f);
  EXPECT_EQ(adasum.lr_scaling, LrScaling::kSqrt);
  EXPECT_EQ(adasum.mega_batch, 4u);
  const PresetValues crossbow = DefaultPreset("crossbow", 4, 101);
  EXPECT_EQ(crossbow.momentum, 0.0);
  EXPECT_FLOAT_EQ(crossbow.local_momentum, 0.9f);
  EXPECT_EQ(crossbow.lr_scaling, LrScaling::kSqrt);
}

TEST(TrainPresets, PaperIsSectionFiveOne) {
  // One setting for every algorithm: the paper grids the learning rate alone (section 5.1).
  const PresetValues v = PaperPreset();
  EXPECT_EQ(v.momentum, 0.9);
  EXPECT_FLOAT_EQ(v.local_momentum, 0.0f);
  EXPECT_EQ(v.mega_batch, 100u);
  EXPECT_EQ(v.lr_scaling, LrScaling::kNone);
  EXPECT_FALSE(v.pert_renormalize);
}

TEST(TrainPresets, LrScaleAndItsSpellings) {
  EXPECT_DOUBLE_EQ(LrScalingFactor(LrScaling::kLinear, 4), 4.0);
  EXPECT_DOUBLE_EQ(LrScalingFactor(LrScaling::kSqrt, 4), 2.0);
  EXPECT_DOUBLE_EQ(LrScalingFactor(LrScaling::kSqrt, 3), std::sqrt(3.0));
  EXPECT_DOUBLE_EQ(LrScalingFactor(LrScaling::kNone, 8), 1.0);
  EXPECT_DOUBLE_EQ(LrScalingFactor(LrScaling::kLinear, 0), 1.0);
  for (LrScaling s : {LrScaling::kNone, LrScaling::kSqrt, LrScaling::kLinear})
    EXPECT_EQ(ParseLrScaling(LrScalingName(s)), s);
  EXPECT_THROW(ParseLrScaling("quadratic"), std::invalid_argument);
  EXPECT_THROW(ParseLrScaling(""), std::invalid_argument);
}

TEST(TrainPresets, TheTableNamesEveryKnobWithoutLookingLikeAnOption) {
  const std::string table = PresetTable();
  for (const char* knob : {"momentum", "local-momentum", "lr-scaling", "mega-batch", "pert-weights"})
    EXPECT_NE(table.find(std::string("\n  ") + knob), std::string::npos) << knob;
  // The help's option list is parsed by scripts/sweep.py: no table line may start like an option.
  EXPECT_EQ(table.find("\n  --"), std::string::npos);
}

}  // namespace
}  // namespace xmlt::apps
