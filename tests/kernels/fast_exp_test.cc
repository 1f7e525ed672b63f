// FastExp against std::exp over the whole range the softmax feeds it.
#include <gtest/gtest.h>

#include <cmath>

#include "kernels/cpu/fast_exp.h"

namespace xmlt::kernels::cpu {
namespace {

TEST(FastExp, RelativeErrorBelowTwoUlpsOverTheRange) {
  double worst = 0;
  for (float x = -87.0f; x <= 88.0f; x += 0.001953125f) {
    const double exact = std::exp(double(x));
    worst = std::max(worst, std::abs(double(FastExp(x)) - exact) / exact);
  }
  EXPECT_LT(worst, 2.5e-7);
  EXPECT_EQ(FastExp(0.0f), 1.0f);
}

TEST(FastExp, NanStaysNan) { EXPECT_TRUE(std::isnan(FastExp(std::nanf("")))); }

TEST(FastExp, ClampsInsteadOfProducingInfOrNan) {
  EXPECT_LT(FastExp(-1000.0f), 1e-37f);
  EXPECT_GE(FastExp(-1000.0f), 0.0f);
  EXPECT_TRUE(std::isfinite(FastExp(1000.0f)));
}

}  // namespace
}  // namespace xmlt::kernels::cpu
