// The learning-rate schedules (scheduler/lr_schedule.h): their factor over a run's progress, and
// the names --lr-schedule takes.
#include "scheduler/lr_schedule.h"

#include <gtest/gtest.h>

#include <cmath>
#include <stdexcept>

namespace xmlt::scheduler {
namespace {

TEST(LrSchedule, ConstantIsOneThroughout) {
  for (uint64_t done : {0ull, 1ull, 500ull, 1000ull, 5000ull}) EXPECT_EQ(LrScale(LrSchedule::kConstant, done, 1000), 1.0);
  EXPECT_EQ(LrScale(LrSchedule::kConstant, 0, 0), 1.0);
}

TEST(LrSchedule, CosineFallsFromOneToZeroOverTheRun) {
  EXPECT_DOUBLE_EQ(LrScale(LrSchedule::kCosine, 0, 1000), 1.0);
  EXPECT_NEAR(LrScale(LrSchedule::kCosine, 250, 1000), 0.5 * (1 + std::sqrt(0.5)), 1e-12);
  EXPECT_NEAR(LrScale(LrSchedule::kCosine, 500, 1000), 0.5, 1e-12);
  EXPECT_NEAR(LrScale(LrSchedule::kCosine, 750, 1000), 0.5 * (1 - std::sqrt(0.5)), 1e-12);
  EXPECT_NEAR(LrScale(LrSchedule::kCosine, 1000, 1000), 0.0, 1e-12);
  // Past the end (a checkpoint of a longer run is refused elsewhere) it stays at 0, never rises.
  EXPECT_NEAR(LrScale(LrSchedule::kCosine, 3000, 1000), 0.0, 1e-12);
  // A run of no rows is at its start.
  EXPECT_DOUBLE_EQ(LrScale(LrSchedule::kCosine, 0, 0), 1.0);
  double previous = 2;
  for (uint64_t done = 0; done <= 1000; done += 10) {
    const double scale = LrScale(LrSchedule::kCosine, done, 1000);
    EXPECT_LT(scale, previous) << done;
    EXPECT_GE(scale, 0.0);
    previous = scale;
  }
}

TEST(LrSchedule, DependsOnlyOnTheFractionTrained) {
  // A function of progress alone: the same fraction of a longer run gives the same factor.
  EXPECT_DOUBLE_EQ(LrScale(LrSchedule::kCosine, 300, 900), LrScale(LrSchedule::kCosine, 3000, 9000));
}

TEST(LrSchedule, ParsesItsNamesAndRefusesOthers) {
  EXPECT_EQ(ParseLrSchedule("constant"), LrSchedule::kConstant);
  EXPECT_EQ(ParseLrSchedule("cosine"), LrSchedule::kCosine);
  EXPECT_STREQ(LrScheduleName(LrSchedule::kCosine), "cosine");
  EXPECT_STREQ(LrScheduleName(LrSchedule::kConstant), "constant");
  for (const char* bad : {"", "Cosine", "linear", "cosine "}) {
    try {
      ParseLrSchedule(bad);
      FAIL() << "accepted '" << bad << "'";
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find("--lr-schedule"), std::string::npos) << e.what();
    }
  }
}

}  // namespace
}  // namespace xmlt::scheduler
