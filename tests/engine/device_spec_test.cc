// Tests of the --devices parser: every accepted form with its ids and order, and every error with
// a message that quotes the offending item and, for repeated devices, suggests the right syntax.
#include "engine/device_spec.h"

#include <gtest/gtest.h>

#include <stdexcept>
#include <string>
#include <vector>

namespace xmlt::engine {
namespace {

std::vector<std::string> Ids(const std::vector<DeviceSpec>& devices) {
  std::vector<std::string> ids;
  for (const DeviceSpec& d : devices) ids.push_back(d.id);
  return ids;
}

// The message of the std::invalid_argument thrown for `text` ("" when nothing is thrown).
std::string ErrorOf(const std::string& text) {
  try {
    ParseDeviceList(text);
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "";
}

// Fails unless parsing throws std::invalid_argument whose message contains every `part`.
void ExpectError(const std::string& text, const std::vector<std::string>& parts) {
  const std::string message = ErrorOf(text);
  ASSERT_FALSE(message.empty()) << "no error for \"" << text << "\"";
  for (const std::string& part : parts) {
    EXPECT_NE(message.find(part), std::string::npos)
        << "error for \"" << text << "\" is \"" << message << "\", lacks \"" << part << "\"";
  }
}

TEST(DeviceSpecTest, CpuWorkers) {
  const std::vector<DeviceSpec> d = ParseDeviceList("cpu:4");
  ASSERT_EQ(d.size(), 4u);
  EXPECT_EQ(Ids(d), (std::vector<std::string>{"cpu:0", "cpu:1", "cpu:2", "cpu:3"}));
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(d[i].kind, DeviceKind::kCpu);
    EXPECT_EQ(d[i].ordinal, i);
    EXPECT_EQ(d[i].logical, 0);
  }
}

TEST(DeviceSpecTest, BareCpuIsOneWorker) {
  const std::vector<DeviceSpec> d = ParseDeviceList("cpu");
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d[0].kind, DeviceKind::kCpu);
  EXPECT_EQ(d[0].ordinal, 0);
  EXPECT_EQ(d[0].id, "cpu:0");
  EXPECT_EQ(Ids(ParseDeviceList("cpu:1")), Ids(d));
}

TEST(DeviceSpecTest, TwoGpus) {
  const std::vector<DeviceSpec> d = ParseDeviceList("cuda:0,cuda:1");
  ASSERT_EQ(d.size(), 2u);
  EXPECT_EQ(Ids(d), (std::vector<std::string>{"cuda:0", "cuda:1"}));
  for (int i = 0; i < 2; ++i) {
    EXPECT_EQ(d[i].kind, DeviceKind::kCuda);
    EXPECT_EQ(d[i].ordinal, i);
    EXPECT_EQ(d[i].logical, 0);
  }
}

TEST(DeviceSpecTest, GpusInTheGivenOrder) {
  EXPECT_EQ(Ids(ParseDeviceList("cuda:3,cuda:1,cuda:12")),
            (std::vector<std::string>{"cuda:3", "cuda:1", "cuda:12"}));
}

TEST(DeviceSpecTest, LogicalDevicesOnOneGpu) {
  const std::vector<DeviceSpec> d = ParseDeviceList("cuda:0x4");
  ASSERT_EQ(d.size(), 4u);
  EXPECT_EQ(Ids(d), (std::vector<std::string>{"cuda:0.0", "cuda:0.1", "cuda:0.2", "cuda:0.3"}));
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(d[i].kind, DeviceKind::kCuda);
    EXPECT_EQ(d[i].ordinal, 0);
    EXPECT_EQ(d[i].logical, i);
  }
  const std::vector<DeviceSpec> one = ParseDeviceList("cuda:2x1");
  ASSERT_EQ(one.size(), 1u);
  EXPECT_EQ(one[0].id, "cuda:2");
  EXPECT_EQ(one[0].ordinal, 2);
  EXPECT_EQ(one[0].logical, 0);
}

TEST(DeviceSpecTest, MixInTheGivenOrder) {
  const std::vector<DeviceSpec> d = ParseDeviceList("cuda:0,cpu:2");
  EXPECT_EQ(Ids(d), (std::vector<std::string>{"cuda:0", "cpu:0", "cpu:1"}));
  EXPECT_EQ(d[0].kind, DeviceKind::kCuda);
  EXPECT_EQ(d[1].kind, DeviceKind::kCpu);
  EXPECT_EQ(d[2].kind, DeviceKind::kCpu);
  EXPECT_EQ(d[2].ordinal, 1);

  EXPECT_EQ(Ids(ParseDeviceList("cpu:2,cuda:1x2,cuda:0")),
            (std::vector<std::string>{"cpu:0", "cpu:1", "cuda:1.0", "cuda:1.1", "cuda:0"}));
}

TEST(DeviceSpecTest, WhitespaceAroundItems) {
  EXPECT_EQ(Ids(ParseDeviceList("  cuda:0 ,\tcpu:2  ")),
            (std::vector<std::string>{"cuda:0", "cpu:0", "cpu:1"}));
  EXPECT_EQ(Ids(ParseDeviceList(" cpu ")), (std::vector<std::string>{"cpu:0"}));
  EXPECT_EQ(ParseDeviceList("cuda:0x2 , cuda:1").size(), 3u);
}

TEST(DeviceSpecTest, LimitsAccepted) {
  const std::vector<DeviceSpec> cpus = ParseDeviceList("cpu:256");
  ASSERT_EQ(cpus.size(), 256u);
  EXPECT_EQ(cpus.back().id, "cpu:255");
  const std::vector<DeviceSpec> logical = ParseDeviceList("cuda:255x256");
  ASSERT_EQ(logical.size(), 256u);
  EXPECT_EQ(logical.back().id, "cuda:255.255");
  EXPECT_EQ(ParseDeviceList("cuda:007")[0].id, "cuda:7");  // leading zeros are just digits
}

TEST(DeviceSpecTest, EmptyList) {
  ExpectError("", {"empty"});
  ExpectError("   ", {"empty"});
}

TEST(DeviceSpecTest, EmptyItem) {
  ExpectError("cpu:2,", {"empty item"});
  ExpectError(",cpu:2", {"empty item"});
  ExpectError("cuda:0,,cuda:1", {"empty item"});
  ExpectError("cuda:0, ,cuda:1", {"empty item"});
}

TEST(DeviceSpecTest, UnknownKind) {
  ExpectError("gpu:0", {"\"gpu:0\"", "unknown"});
  ExpectError("cuda:0,tpu", {"\"tpu\"", "unknown"});
  ExpectError("CPU:2", {"\"CPU:2\"", "unknown"});
  ExpectError("cpu2", {"\"cpu2\"", "unknown"});
  ExpectError("cpu :2", {"\"cpu :2\""});
}

TEST(DeviceSpecTest, BareCudaNeedsAnIndex) { ExpectError("cuda", {"\"cuda\"", "cuda:0"}); }

TEST(DeviceSpecTest, BadNumbers) {
  ExpectError("cpu:", {"\"cpu:\"", "missing"});
  ExpectError("cpu:four", {"\"cpu:four\"", "not a number"});
  ExpectError("cpu:-1", {"\"cpu:-1\"", "not a number"});
  ExpectError("cpu:+2", {"\"cpu:+2\""});
  ExpectError("cpu:2.5", {"\"cpu:2.5\""});
  ExpectError("cpu:2x2", {"\"cpu:2x2\""});
  ExpectError("cuda:", {"\"cuda:\"", "missing"});
  ExpectError("cuda:a", {"\"cuda:a\"", "not a number"});
  ExpectError("cuda:x4", {"\"cuda:x4\"", "missing"});
  ExpectError("cuda:0x", {"\"cuda:0x\"", "missing"});
  ExpectError("cuda:0x4x2", {"\"cuda:0x4x2\"", "not a number"});
  ExpectError("cuda:0X4", {"\"cuda:0X4\""});
  ExpectError("cuda:0 x4", {"\"cuda:0 x4\""});
  ExpectError("cuda:0,cuda:1x", {"\"cuda:1x\""});
  ExpectError("cuda:99999999999999999999999", {"out of range"});
  ExpectError("cuda:256", {"\"cuda:256\"", "out of range"});
}

TEST(DeviceSpecTest, CountsOutOfRange) {
  ExpectError("cpu:0", {"\"cpu:0\"", "out of range"});
  ExpectError("cpu:257", {"\"cpu:257\"", "out of range"});
  ExpectError("cuda:0x0", {"\"cuda:0x0\"", "out of range"});
  ExpectError("cuda:1x257", {"\"cuda:1x257\"", "out of range"});
  ExpectError("cpu:100000000000000000000", {"out of range"});
}

TEST(DeviceSpecTest, GpuNamedTwice) {
  ExpectError("cuda:0,cuda:0", {"\"cuda:0\"", "twice", "cuda:0x2"});
  ExpectError("cuda:1,cuda:0, cuda:1 ", {"\"cuda:1\"", "twice", "cuda:1x2"});
  ExpectError("cuda:0x2,cuda:0", {"\"cuda:0\"", "twice", "cuda:0x3"});
  ExpectError("cuda:3,cuda:3x4", {"\"cuda:3x4\"", "twice", "cuda:3x5"});
  ExpectError("cuda:0,cuda:00", {"\"cuda:00\"", "twice", "cuda:0x2"});
}

TEST(DeviceSpecTest, CpuNamedTwice) {
  ExpectError("cpu:2,cpu:2", {"\"cpu:2\"", "twice", "cpu:4"});
  ExpectError("cpu,cpu", {"\"cpu\"", "twice", "cpu:2"});
  ExpectError("cpu:3,cuda:0,cpu", {"\"cpu\"", "twice", "cpu:4"});
}

TEST(DeviceSpecTest, ErrorsAreInvalidArgument) {
  EXPECT_THROW(ParseDeviceList("cuda:0,cuda:0"), std::invalid_argument);
  EXPECT_THROW(ParseDeviceList("cpu,cpu"), std::invalid_argument);
  EXPECT_THROW(ParseDeviceList("mps:0"), std::invalid_argument);
  EXPECT_THROW(ParseDeviceList(""), std::invalid_argument);
}

TEST(DeviceSpecTest, OnlyLogicalDevicesOfOneGpuInOneProcessShareAContext) {
  const std::vector<DeviceSpec> d = ParseDeviceList("cuda:0x2,cuda:1,cpu:2");
  EXPECT_TRUE(SharesContext(d[0], 0, d[1], 0));   // cuda:0.0 and cuda:0.1
  EXPECT_TRUE(SharesContext(d[1], 0, d[0], 0));
  EXPECT_FALSE(SharesContext(d[0], 0, d[2], 0));  // another GPU
  EXPECT_FALSE(SharesContext(d[0], 0, d[1], 1));  // GPU 0 of another rank: another process
  EXPECT_FALSE(SharesContext(d[3], 0, d[4], 0));  // CPU workers share no context
  EXPECT_FALSE(SharesContext(d[0], 0, d[3], 0));
}

}  // namespace
}  // namespace xmlt::engine
