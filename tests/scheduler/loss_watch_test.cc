// Divergence by loss explosion (reliability, second round, row 16).
#include "scheduler/loss_watch.h"

#include <gtest/gtest.h>

#include <limits>

namespace xmlt::scheduler {
namespace {

TEST(LossWatch, ALossAboveTheFactorTimesTheFirstBatchsIsADivergence) {
  LossWatch watch(10);
  EXPECT_EQ(watch.Check(5.0), "");   // the reference
  EXPECT_EQ(watch.Check(0.01), "");  // an easy batch does not move it
  EXPECT_EQ(watch.Check(49.0), "");  // below 10 x 5
  EXPECT_NE(watch.Check(50.5).find("loss 50.5, above 10x the first batch's 5"), std::string::npos);
  EXPECT_EQ(watch.Check(3.0), "");
}

TEST(LossWatch, NonFiniteLossesAlwaysDivergeAndZeroTurnsTheFactorOff) {
  LossWatch off(0);
  EXPECT_EQ(off.Check(1.0), "");
  EXPECT_EQ(off.Check(1e12), "");
  EXPECT_EQ(off.Check(std::numeric_limits<double>::quiet_NaN()), "non-finite loss");
  EXPECT_EQ(off.Check(std::numeric_limits<double>::infinity()), "non-finite loss");
  LossWatch first(10);
  EXPECT_EQ(first.Check(1e9), "");  // nothing to compare the first batch with
  EXPECT_EQ(first.Check(std::numeric_limits<double>::quiet_NaN()), "non-finite loss");
}

}  // namespace
}  // namespace xmlt::scheduler
