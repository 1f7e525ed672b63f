// Issue: reliability, fifth round, row 10. XMLT_SIM_CHECKS=OFF, no, false or anything else left the
// checks on, silently, and XMLT_SIM_ORDER beyond 2^64 - 1 ran as 2^64 - 1: a run meant to replay
// an order, or to run without the checks, did something else. Each value is now a setting or
// refused (the program exits with code 2, naming it).
#include "gpusim/check_options.h"

#include <gtest/gtest.h>

#include <stdexcept>

namespace gpusim {
namespace {

TEST(CheckOptions, TheChecksVariableIsOnOffOrRefused) {
  EXPECT_TRUE(ParseChecksSetting(nullptr));
  EXPECT_TRUE(ParseChecksSetting(""));
  EXPECT_TRUE(ParseChecksSetting("1"));
  EXPECT_TRUE(ParseChecksSetting("on"));
  EXPECT_FALSE(ParseChecksSetting("0"));
  EXPECT_FALSE(ParseChecksSetting("off"));
  for (const char* value : {"OFF", "no", "false", "garbage", "00", " 0"})
    EXPECT_THROW(ParseChecksSetting(value), std::invalid_argument) << value;
}

TEST(CheckOptions, TheTurnOrderSeedIsAnUnsignedSeedDefaultOrRefused) {
  EXPECT_EQ(ParseTurnOrderSeed(nullptr), std::nullopt);
  EXPECT_EQ(ParseTurnOrderSeed("default"), std::nullopt);
  EXPECT_EQ(ParseTurnOrderSeed("20261205"), std::optional<uint64_t>(20261205));
  EXPECT_EQ(ParseTurnOrderSeed("18446744073709551615"), std::optional<uint64_t>(18446744073709551615ull));
  for (const char* value : {"18446744073709551616", "99999999999999999999999", "-1", "+1", " 1", "1x", "x"})
    EXPECT_THROW(ParseTurnOrderSeed(value), std::invalid_argument) << value;
  try {
    ParseTurnOrderSeed("99999999999999999999999");
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("is beyond 18446744073709551615"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace gpusim
