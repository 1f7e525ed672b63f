// Tests of emulated heterogeneity: --speed and --hetero parsing, and the statistics of the CVB
// gamma model (Algorithm 12, DANA appendix A.4) that SlowdownModel draws from.
#include "engine/heterogeneity.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace xmlt::engine {
namespace {

struct Moments {
  double mean = 0;
  double cv = 0;  // sample standard deviation / mean
};

Moments MomentsOf(const std::vector<double>& x) {
  double sum = 0;
  for (double v : x) sum += v;
  const double mean = sum / x.size();
  double sq = 0;
  for (double v : x) sq += (v - mean) * (v - mean);
  return {mean, std::sqrt(sq / (x.size() - 1)) / mean};
}

HeterogeneitySpec Cvb(double vmach, double vtask, std::vector<double> speed = {}) {
  HeterogeneitySpec spec;
  spec.cvb = true;
  spec.vmach = vmach;
  spec.vtask = vtask;
  spec.speed = std::move(speed);
  return spec;
}

std::vector<double> Draws(SlowdownModel* model, size_t device, int n) {
  std::vector<double> out;
  for (int i = 0; i < n; ++i) out.push_back(model->NextFactor(device));
  return out;
}

// ---- ParseSpeeds ----

TEST(ParseSpeedsTest, Values) {
  EXPECT_EQ(ParseSpeeds("1,1.1,1.2,1.32"), (std::vector<double>{1, 1.1, 1.2, 1.32}));
  EXPECT_EQ(ParseSpeeds("2"), (std::vector<double>{2}));
  EXPECT_EQ(ParseSpeeds(" 1 , 0.5,\t3e0 "), (std::vector<double>{1, 0.5, 3}));
  EXPECT_EQ(ParseSpeeds("1e-3,.5"), (std::vector<double>{0.001, 0.5}));
}

TEST(ParseSpeedsTest, EmptyMeansAllOne) {
  EXPECT_TRUE(ParseSpeeds("").empty());
  EXPECT_TRUE(ParseSpeeds("  ").empty());
}

TEST(ParseSpeedsTest, Errors) {
  for (const char* bad : {"0", "1,0", "-1", "1,-0.5", "abc", "1,,2", "1,", ",1", "1 2", "1.2.3",
                          "inf", "nan", "1,infinity", "1e400", "+1", "1x", "0x10"}) {
    EXPECT_THROW(ParseSpeeds(bad), std::invalid_argument) << bad;
  }
}

TEST(ParseSpeedsTest, ErrorNamesTheItem) {
  try {
    ParseSpeeds("1,1.1,fast,1.3");
    FAIL() << "no error";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("\"fast\""), std::string::npos) << e.what();
  }
  try {
    ParseSpeeds("1,-2");
    FAIL() << "no error";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("\"-2\""), std::string::npos) << e.what();
  }
}

// ---- ParseHetero ----

TEST(ParseHeteroTest, None) {
  for (const char* text : {"none", " none ", ""}) {
    const HeterogeneitySpec spec = ParseHetero(text);
    EXPECT_FALSE(spec.cvb) << text;
    EXPECT_TRUE(spec.speed.empty());
  }
}

TEST(ParseHeteroTest, CvbWithBothKeys) {
  const HeterogeneitySpec spec = ParseHetero("cvb:vmach=0.6,vtask=0.1");
  EXPECT_TRUE(spec.cvb);
  EXPECT_DOUBLE_EQ(spec.vmach, 0.6);
  EXPECT_DOUBLE_EQ(spec.vtask, 0.1);
  const HeterogeneitySpec swapped = ParseHetero(" cvb : vtask = 0.25 , vmach = 0.1 ");
  EXPECT_TRUE(swapped.cvb);
  EXPECT_DOUBLE_EQ(swapped.vmach, 0.1);
  EXPECT_DOUBLE_EQ(swapped.vtask, 0.25);
}

TEST(ParseHeteroTest, KeysAreOptional) {
  const HeterogeneitySpec defaults;
  const HeterogeneitySpec bare = ParseHetero("cvb");
  EXPECT_TRUE(bare.cvb);
  EXPECT_DOUBLE_EQ(bare.vmach, defaults.vmach);
  EXPECT_DOUBLE_EQ(bare.vtask, defaults.vtask);
  const HeterogeneitySpec mach = ParseHetero("cvb:vmach=0.3");
  EXPECT_DOUBLE_EQ(mach.vmach, 0.3);
  EXPECT_DOUBLE_EQ(mach.vtask, defaults.vtask);
  const HeterogeneitySpec task = ParseHetero("cvb:vtask=0.2");
  EXPECT_DOUBLE_EQ(task.vmach, defaults.vmach);
  EXPECT_DOUBLE_EQ(task.vtask, 0.2);
  EXPECT_DOUBLE_EQ(ParseHetero("cvb:vmach=0").vmach, 0);  // no spread between devices
}

TEST(ParseHeteroTest, Errors) {
  for (const char* bad :
       {"gamma", "cvb2", "nonee", "cvb:", "cvb:vmach", "cvb:vmach=", "cvb:vmach=x",
        "cvb:vmach=0.6,", "cvb:,vtask=0.1", "cvb:speed=1", "cvb:vmach=0.6,vmach=0.5",
        "cvb:vmach=-0.1", "cvb:vtask=5", "cvb:vtask=inf", "cvb:vmach=nan", "cvb;vmach=0.6",
        "none:vmach=0.6", "cvb:vmach=0.6;vtask=0.1"}) {
    EXPECT_THROW(ParseHetero(bad), std::invalid_argument) << bad;
  }
}

TEST(ParseHeteroTest, ErrorNamesTheProblem) {
  try {
    ParseHetero("cvb:vmach=0.6,vspeed=2");
    FAIL() << "no error";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("vspeed"), std::string::npos) << e.what();
  }
  try {
    ParseHetero("cvb:vtask=0.1,vtask=0.2");
    FAIL() << "no error";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("twice"), std::string::npos) << e.what();
  }
}

// ---- SlowdownModel ----

TEST(SlowdownModelTest, WithoutCvbTheFactorIsTheSpeedExactly) {
  HeterogeneitySpec spec;
  spec.speed = {1, 1.1, 1.2, 1.32};
  SlowdownModel model(spec, 4, 7);
  ASSERT_EQ(model.num_devices(), 4u);
  for (int round = 0; round < 100; ++round) {
    for (size_t i = 0; i < 4; ++i) EXPECT_EQ(model.NextFactor(i), spec.speed[i]);
  }
  for (size_t i = 0; i < 4; ++i) EXPECT_EQ(model.DeviceMean(i), spec.speed[i]);
}

TEST(SlowdownModelTest, EmptySpeedMeansOne) {
  SlowdownModel model(HeterogeneitySpec{}, 3, 1);
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(model.NextFactor(i), 1.0);
    EXPECT_EQ(model.DeviceMean(i), 1.0);
  }
}

TEST(SlowdownModelTest, DeterministicForASeed) {
  const HeterogeneitySpec spec = Cvb(0.6, 0.1, {1, 1.5, 2});
  SlowdownModel a(spec, 3, 42), b(spec, 3, 42);
  for (size_t i = 0; i < 3; ++i) EXPECT_EQ(a.DeviceMean(i), b.DeviceMean(i));
  for (int k = 0; k < 200; ++k) {
    const size_t i = k % 3;
    EXPECT_EQ(a.NextFactor(i), b.NextFactor(i)) << "draw " << k;
  }
}

TEST(SlowdownModelTest, DifferentSeedsDiffer) {
  const HeterogeneitySpec spec = Cvb(0.6, 0.1);
  SlowdownModel a(spec, 2, 1), b(spec, 2, 2);
  EXPECT_NE(a.DeviceMean(0), b.DeviceMean(0));
  EXPECT_NE(a.DeviceMean(1), b.DeviceMean(1));
  EXPECT_NE(Draws(&a, 0, 10), Draws(&b, 0, 10));
  // Devices of one model get different streams too.
  SlowdownModel c(Cvb(0, 0.1), 2, 1);  // equal means, so only the streams can differ
  EXPECT_EQ(c.DeviceMean(0), c.DeviceMean(1));
  EXPECT_NE(Draws(&c, 0, 10), Draws(&c, 1, 10));
}

TEST(SlowdownModelTest, DeviceStreamIndependentOfOtherDevices) {
  const HeterogeneitySpec spec = Cvb(0.6, 0.1);
  SlowdownModel quiet(spec, 3, 99);
  const std::vector<double> alone = Draws(&quiet, 1, 50);

  SlowdownModel busy(spec, 3, 99);
  std::vector<double> interleaved;
  for (int k = 0; k < 50; ++k) {
    Draws(&busy, 0, 7);  // the others draw much more, in between
    Draws(&busy, 2, 3);
    interleaved.push_back(busy.NextFactor(1));
  }
  EXPECT_EQ(alone, interleaved);
  EXPECT_EQ(quiet.DeviceMean(1), busy.DeviceMean(1));

  // Nor on the number of devices: device 1 of a 2-device model sees the same sequence.
  SlowdownModel smaller(spec, 2, 99);
  EXPECT_EQ(smaller.DeviceMean(1), quiet.DeviceMean(1));
  EXPECT_EQ(Draws(&smaller, 1, 50), alone);
}

TEST(SlowdownModelTest, CvbDrawsMatchTheDeviceMeanAndVtask) {
  // time ~ G(alpha_task, p_i / alpha_task): mean p_i, coefficient of variation V_task; times
  // speed_i. 20000 draws: the mean's relative standard error is 0.1 / sqrt(20000) ~ 0.0007.
  const std::vector<double> speed = {1, 1.1, 1.2, 1.32};
  for (double vtask : {0.1, 0.3}) {
    SlowdownModel model(Cvb(0.6, vtask, speed), 4, 2024);
    for (size_t i = 0; i < 4; ++i) {
      const Moments m = MomentsOf(Draws(&model, i, 20000));
      EXPECT_NEAR(m.mean / model.DeviceMean(i), 1.0, 0.01) << "device " << i << " vtask " << vtask;
      EXPECT_NEAR(m.cv, vtask, 0.05 * vtask) << "device " << i;
    }
  }
}

TEST(SlowdownModelTest, SpreadOfDeviceMeansIsVmach) {
  // p_j ~ G(alpha_mach, 1 / alpha_mach): mean mu_mach = 1, coefficient of variation V_mach.
  for (double vmach : {0.6, 0.1}) {
    std::vector<double> means;
    for (uint64_t seed = 0; seed < 500; ++seed) {
      SlowdownModel model(Cvb(vmach, 0.1), 8, seed);
      for (size_t i = 0; i < 8; ++i) means.push_back(model.DeviceMean(i));
    }
    const Moments m = MomentsOf(means);  // 4000 values
    EXPECT_NEAR(m.mean, 1.0, 0.05 * vmach) << "vmach " << vmach;
    EXPECT_NEAR(m.cv, vmach, 0.05 * vmach) << "vmach " << vmach;
  }
}

TEST(SlowdownModelTest, DeviceMeanIncludesTheSpeed) {
  // Same seed, same device streams: the p_i are equal, so the means scale by the speeds.
  SlowdownModel plain(Cvb(0.6, 0.1), 3, 5);
  SlowdownModel slowed(Cvb(0.6, 0.1, {1, 2, 0.5}), 3, 5);
  EXPECT_DOUBLE_EQ(slowed.DeviceMean(0), plain.DeviceMean(0));
  EXPECT_DOUBLE_EQ(slowed.DeviceMean(1), 2 * plain.DeviceMean(1));
  EXPECT_DOUBLE_EQ(slowed.DeviceMean(2), 0.5 * plain.DeviceMean(2));
  EXPECT_DOUBLE_EQ(slowed.NextFactor(1), 2 * plain.NextFactor(1));
}

TEST(SlowdownModelTest, ZeroVariationIsTheLimit) {
  // V_mach = 0: every p_i = mu_mach = 1; V_task = 0: every batch takes its device's mean.
  SlowdownModel no_mach(Cvb(0, 0.1, {1, 2}), 2, 3);
  EXPECT_EQ(no_mach.DeviceMean(0), 1.0);
  EXPECT_EQ(no_mach.DeviceMean(1), 2.0);
  SlowdownModel no_task(Cvb(0.6, 0, {1, 2}), 2, 3);
  for (size_t i = 0; i < 2; ++i) {
    const double mean = no_task.DeviceMean(i);
    EXPECT_NE(mean, 1.0 + i);  // p_i was drawn
    for (int k = 0; k < 5; ++k) EXPECT_EQ(no_task.NextFactor(i), mean);
  }
}

TEST(SlowdownModelTest, FactorsArePositive) {
  SlowdownModel model(Cvb(kMaxVariation, 1.0), 16, 11);
  for (size_t i = 0; i < 16; ++i) {
    EXPECT_GT(model.DeviceMean(i), 0);
    for (int k = 0; k < 200; ++k) EXPECT_GT(model.NextFactor(i), 0);
  }
}

TEST(SlowdownModelTest, Errors) {
  HeterogeneitySpec spec;
  spec.speed = {1, 1.1, 1.2};
  EXPECT_THROW(SlowdownModel(spec, 4, 0), std::invalid_argument);  // speed count mismatch
  EXPECT_THROW(SlowdownModel(spec, 2, 0), std::invalid_argument);
  EXPECT_NO_THROW(SlowdownModel(spec, 3, 0));
  EXPECT_THROW(SlowdownModel(HeterogeneitySpec{}, 0, 0), std::invalid_argument);
  spec.speed = {1, 0, 1};
  EXPECT_THROW(SlowdownModel(spec, 3, 0), std::invalid_argument);
  spec.speed = {1, NAN, 1};
  EXPECT_THROW(SlowdownModel(spec, 3, 0), std::invalid_argument);
  EXPECT_THROW(SlowdownModel(Cvb(-0.1, 0.1), 2, 0), std::invalid_argument);
  EXPECT_THROW(SlowdownModel(Cvb(0.6, kMaxVariation * 2), 2, 0), std::invalid_argument);

  SlowdownModel model(HeterogeneitySpec{}, 2, 0);
  EXPECT_THROW(model.NextFactor(2), std::out_of_range);
  EXPECT_THROW(model.DeviceMean(2), std::out_of_range);
}

}  // namespace
}  // namespace xmlt::engine
