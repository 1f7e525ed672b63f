// The progress line on a terminal says how long the run has taken and how long it has left
// (issue 62, point 6: it said only the share done and the loss).
#include "apps/progress_line.h"

#include <gtest/gtest.h>

namespace xmlt::apps {
namespace {

TEST(ProgressLineTest, SaysTheTimeElapsedAndLeft) {
  EXPECT_EQ(ProgressLine(300, 1000, 1.25, 30.0), " 30.0%  batch loss 1.2500  0:30 elapsed, 1:10 left");
  EXPECT_EQ(ProgressLine(1000, 1000, 0.5, 125.0), "100.0%  batch loss 0.5000  2:05 elapsed, 0:00 left");
  EXPECT_EQ(ProgressLine(0, 1000, 0.0, 3.0), "  0.0%  batch loss 0.0000  0:03 elapsed, ? left");
}

TEST(ProgressLineTest, DurationsPassTheHour) {
  EXPECT_EQ(Duration(7.4), "0:07");
  EXPECT_EQ(Duration(754), "12:34");
  EXPECT_EQ(Duration(3723), "1:02:03");
  EXPECT_EQ(Duration(-1), "0:00");
}

}  // namespace
}  // namespace xmlt::apps
