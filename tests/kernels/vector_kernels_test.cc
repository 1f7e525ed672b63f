// The CPU step's vector kernels on every instruction set this CPU runs (cpu_isa.h): each against
// a scalar double reference, and whole training steps that agree across the paths.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "kernels/cpu/bf16_gemm.h"
#include "kernels/cpu/cache_line_allocator.h"
#include "kernels/cpu/cpu_isa.h"
#include "kernels/cpu/sparse_mlp.h"
#include "kernels/cpu/stochastic_rounding.h"
#include "kernels/cpu/store_fence.h"
#include "tests/kernels/kernel_test_util.h"

namespace xmlt::kernels::cpu {
namespace {

const CpuIsa kAllIsas[] = {CpuIsa::kBaseline, CpuIsa::kAvx2, CpuIsa::kAvx512};

// Lengths around the vector widths (4, 8, 16 floats) and the 16 max lanes, and a long row.
const uint64_t kLengths[] = {1, 3, 15, 16, 17, 31, 33, 256, 1000, 4099};

std::vector<float> Uniform(uint64_t n, float low, float high, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> uniform(low, high);
  std::vector<float> v(n);
  for (float& x : v) x = uniform(rng);
  return v;
}

// The exp of a difference: FastExp's 2e-7, plus the rounding of z - max in float (|z - max| < 40
// here, so up to 40 * 2^-24 in the argument) and of the result.
constexpr double kExpRelative = 4e-6;
// A float sum of up to 4,099 terms in any order (the ISAs' vector widths differ).
constexpr double kSumRelative = 2e-5;
// One float operation with or without a fused multiply-add: a couple of float ulps.
constexpr double kUlps = 3.0 * 0x1p-24;

class VectorKernelsOnIsa : public ::testing::TestWithParam<CpuIsa> {
 protected:
  void SetUp() override {
    if (!CpuSupports(GetParam())) GTEST_SKIP() << "this CPU has no " << CpuIsaName(GetParam());
    vec_ = &VectorKernelsFor(GetParam());
  }
  const VectorKernels* vec_ = nullptr;
};

TEST_P(VectorKernelsOnIsa, NamesItsIsa) { EXPECT_STREQ(vec_->isa, CpuIsaName(GetParam())); }

TEST_P(VectorKernelsOnIsa, BiasExpInPlaceMatchesTheReference) {
  for (uint64_t n : kLengths) {
    std::vector<float> z = Uniform(n, -20, 20, n), bias = Uniform(n, -2, 2, n + 1);
    std::vector<double> sum_z(n);
    for (uint64_t j = 0; j < n; ++j) sum_z[j] = double(z[j] + bias[j]);  // the kernel adds in float
    const double max = *std::max_element(sum_z.begin(), sum_z.end());
    float got_max = 0, got_sum = 0;
    vec_->bias_exp_in_place(z.data(), bias.data(), n, &got_max, &got_sum);
    EXPECT_EQ(double(got_max), max) << n;
    double sum = 0;
    for (uint64_t j = 0; j < n; ++j) {
      const double expected = std::exp(sum_z[j] - max);
      sum += expected;
      ASSERT_NEAR(z[j], expected, kExpRelative * expected + 1e-38) << "n=" << n << " j=" << j;
    }
    EXPECT_NEAR(got_sum, sum, kSumRelative * sum) << n;
  }
}

// The streamed variant: z stays, dst gets exactly what the in-place kernel leaves, on a dst on a
// cache line boundary (streamed stores) and 1 to 15 floats past one (plain stores); the sum has
// the same bits wherever dst lies.
TEST_P(VectorKernelsOnIsa, BiasExpStreamEqualsInPlaceWhereverDstLies) {
  for (uint64_t n : {uint64_t{1}, uint64_t{63}, uint64_t{64}, uint64_t{65}, uint64_t{200}, uint64_t{512},
                     uint64_t{4099}}) {
    const std::vector<float> z = Uniform(n, -20, 20, n + 3), bias = Uniform(n, -2, 2, n + 4);
    std::vector<float> in_place = z;
    float max = 0, sum = 0;
    vec_->bias_exp_in_place(in_place.data(), bias.data(), n, &max, &sum);
    std::vector<float, CacheLineAllocator<float>> out(n + 16 + 64);
    float first_sum = 0;
    for (uint64_t offset = 0; offset < 16; offset += 5) {
      float* dst = out.data() + offset;
      std::fill(out.begin(), out.end(), -1.0f);
      const std::vector<float> z_before = z;
      float got_max = 0, got_sum = 0;
      vec_->bias_exp_stream(z.data(), bias.data(), n, dst, &got_max, &got_sum);
      StoreFence();
      EXPECT_EQ(z, z_before);
      EXPECT_EQ(got_max, max) << n;
      EXPECT_NEAR(got_sum, sum, kSumRelative * sum) << n;
      if (offset == 0) first_sum = got_sum;
      EXPECT_EQ(got_sum, first_sum) << "n=" << n << " offset " << offset;
      for (uint64_t j = 0; j < n; ++j) ASSERT_EQ(dst[j], in_place[j]) << "n=" << n << " offset " << offset << " j=" << j;
      for (uint64_t j = 0; j < offset; ++j) ASSERT_EQ(out[j], -1.0f) << "before dst, offset " << offset;
      for (uint64_t j = offset + n; j < out.size(); ++j) ASSERT_EQ(out[j], -1.0f) << "after dst, n=" << n;
    }
  }
}

TEST_P(VectorKernelsOnIsa, MaxIsExactAndFindsTheMaxInEveryLane) {
  for (uint64_t n : kLengths) {
    for (uint64_t at : {uint64_t{0}, n / 2, n - 1}) {
      std::vector<float> z = Uniform(n, -5, 5, n * 7 + at);
      z[at] = 6.5f;
      EXPECT_EQ(vec_->max(z.data(), n), 6.5f) << "n=" << n << " at " << at;
    }
  }
}

TEST_P(VectorKernelsOnIsa, ExpSumsMatchTheReference) {
  for (uint64_t n : kLengths) {
    const std::vector<float> z = Uniform(n, -30, 3, n + 5);
    const float max = 3.0f;
    double sum = 0;
    for (float x : z) sum += std::exp(double(x) - max);
    EXPECT_NEAR(vec_->exp_sum(z.data(), max, n), sum, kSumRelative * sum) << n;
    std::vector<float> in_place = z;
    EXPECT_NEAR(vec_->exp_in_place(in_place.data(), max, n), sum, kSumRelative * sum) << n;
    std::vector<float> scaled(n);
    vec_->scaled_exp(scaled.data(), z.data(), 0.25f, max, n);
    for (uint64_t j = 0; j < n; ++j) {
      const double expected = std::exp(double(z[j]) - max);
      ASSERT_NEAR(in_place[j], expected, kExpRelative * expected + 1e-38) << "n=" << n << " j=" << j;
      ASSERT_NEAR(scaled[j], 0.25 * expected, 0.25 * kExpRelative * expected + 1e-38) << "n=" << n << " j=" << j;
    }
  }
}

TEST_P(VectorKernelsOnIsa, ExpOfNanStaysNanAndVeryNegativeGoesToZero) {
  std::vector<float> z(33, -1000.0f);
  z[17] = std::nanf("");
  std::vector<float> out(33);
  vec_->scaled_exp(out.data(), z.data(), 1.0f, 0.0f, 33);
  EXPECT_TRUE(std::isnan(out[17]));
  for (uint64_t j = 0; j < 33; ++j) {
    if (j != 17) {
      EXPECT_LT(out[j], 1e-37f) << j;
      EXPECT_GE(out[j], 0.0f) << j;
    }
  }
}

TEST_P(VectorKernelsOnIsa, ElementwiseKernelsMatchTheReference) {
  for (uint64_t n : kLengths) {
    const std::vector<float> x = Uniform(n, -1, 1, n + 11), g = Uniform(n, -1, 1, n + 12);
    std::vector<float> scaled(n), sums = Uniform(n, -1, 1, n + 13), w = Uniform(n, -1, 1, n + 14);
    std::vector<float> w2 = w, v = Uniform(n, -1, 1, n + 15);
    const std::vector<float> sums0 = sums, w0 = w, v0 = v;
    vec_->scale(scaled.data(), x.data(), 0.375f, n);
    vec_->add(sums.data(), x.data(), n);
    vec_->sgd(w.data(), g.data(), 0.1f, n);
    vec_->momentum(w2.data(), v.data(), g.data(), 0.9f, 0.1f, n);
    std::vector<float> fused(n), fused_sums = sums0;
    vec_->scale_add(fused.data(), x.data(), 0.375f, fused_sums.data(), n);
    for (uint64_t j = 0; j < n; ++j) {
      EXPECT_EQ(scaled[j], 0.375f * x[j]);  // exact in any ISA
      EXPECT_EQ(sums[j], sums0[j] + x[j]);
      EXPECT_EQ(fused[j], 0.375f * x[j]);
      EXPECT_EQ(fused_sums[j], sums0[j] + 0.375f * x[j]);
      const double w_expected = double(w0[j]) - 0.1 * double(g[j]);
      EXPECT_NEAR(w[j], w_expected, kUlps * 2) << j;
      const double v_expected = 0.9 * double(v0[j]) + double(g[j]);
      EXPECT_NEAR(v[j], v_expected, kUlps * 4) << j;
      EXPECT_NEAR(w2[j], double(w0[j]) - 0.1 * double(v[j]), kUlps * 2) << j;
    }
  }
}

TEST_P(VectorKernelsOnIsa, AxpyAndAdagradMatchTheReference) {
  for (uint64_t n : kLengths) {
    const std::vector<float> x = Uniform(n, -1, 1, n + 21), d = Uniform(n, -1, 1, n + 22);
    std::vector<float> y = Uniform(n, -1, 1, n + 23), w = Uniform(n, -1, 1, n + 24);
    // Squares as Adagrad leaves them: non-negative, some zero (a coordinate's first step).
    std::vector<float> squares = Uniform(n, 0, 2, n + 25);
    for (uint64_t j = 0; j < n; j += 3) squares[j] = 0;
    const std::vector<float> y0 = y, w0 = w, squares0 = squares;
    vec_->axpy(y.data(), x.data(), 0.375f, n);
    vec_->adagrad(w.data(), squares.data(), d.data(), 0.5f, 0.1f, 1e-10f, n);
    for (uint64_t j = 0; j < n; ++j) {
      EXPECT_NEAR(y[j], double(y0[j]) + 0.375 * double(x[j]), kUlps * 2) << j;
      const double g = 0.5 * double(d[j]), s = double(squares0[j]) + g * g;
      EXPECT_NEAR(squares[j], s, kUlps * 4) << j;
      const double step = 0.1 * g / (std::sqrt(s) + 1e-10);
      EXPECT_NEAR(w[j], double(w0[j]) - step, kUlps * 4) << j;
    }
  }
}

// The bf16-state kernels: the weight steps as the fp32 kernel's does (a few ulps, whether or not
// the multiply-add fused), and the state is stored as the fp32 result rounded with each value's own
// noise, one of its two bf16 neighbours.
TEST_P(VectorKernelsOnIsa, Bf16StateKernelsMatchTheReference) {
  constexpr uint32_t kKey = 4242;
  constexpr uint64_t kIndex = (uint64_t(1) << 33) + 5;  // an offset past 2^32
  auto widen = [](uint16_t v) { return double(WidenBf16(v)); };
  auto neighbours = [](double x, double stored) {
    return std::abs(stored - x) <= 0x1p-7 * std::abs(x) + 1e-30;  // within one bf16 step
  };
  for (uint64_t n : kLengths) {
    const std::vector<float> g = Uniform(n, -1, 1, n + 31), w0 = Uniform(n, -1, 1, n + 32);
    std::vector<uint16_t> v0(n), s0(n);
    const std::vector<float> v_values = Uniform(n, -1, 1, n + 33), s_values = Uniform(n, 0, 2, n + 34);
    for (uint64_t j = 0; j < n; ++j) v0[j] = FloatToBf16(v_values[j]), s0[j] = j % 3 == 0 ? 0 : FloatToBf16(s_values[j]);
    std::vector<float> w = w0, w2 = w0;
    std::vector<uint16_t> v = v0, s = s0, rounded(n);
    vec_->momentum_bf16(w.data(), v.data(), g.data(), 0.9f, 0.1f, n, kKey, kIndex);
    vec_->adagrad_bf16(w2.data(), s.data(), g.data(), 0.5f, 0.1f, 1e-10f, n, kKey, kIndex);
    vec_->round_bf16(g.data(), rounded.data(), n, kKey, kIndex);
    for (uint64_t j = 0; j < n; ++j) {
      const double next = 0.9 * widen(v0[j]) + double(g[j]);
      EXPECT_NEAR(w[j], double(w0[j]) - 0.1 * next, kUlps * 4) << j;
      EXPECT_TRUE(neighbours(next, widen(v[j]))) << j << ": " << next << " stored " << widen(v[j]);
      const float next_float = float(next);
      // Where the fp32 result is the reference's to the float, the stored value is its rounding
      // with this value's noise exactly.
      if (std::abs(double(next_float) - next) == 0)
        EXPECT_EQ(v[j], StochasticBf16(next_float, RoundingNoise(kKey, kIndex + j))) << j;
      const double grad = 0.5 * double(g[j]), sum = widen(s0[j]) + grad * grad;
      EXPECT_NEAR(w2[j], double(w0[j]) - 0.1 * grad / (std::sqrt(sum) + 1e-10), kUlps * 4) << j;
      EXPECT_TRUE(neighbours(sum, widen(s[j]))) << j;
      EXPECT_EQ(rounded[j], StochasticBf16(g[j], RoundingNoise(kKey, kIndex + j))) << j;
    }
  }
}

// The kernels that read weights kept in bf16: the widening is exact, and the row sum is the fp32
// axpy of the widened row (a few ulps, whether or not the multiply-add fused).
TEST_P(VectorKernelsOnIsa, Bf16WeightKernelsMatchTheReference) {
  for (uint64_t n : kLengths) {
    const std::vector<float> x_values = Uniform(n, -2, 2, n + 41), y0 = Uniform(n, -1, 1, n + 42);
    std::vector<uint16_t> x(n);
    for (uint64_t j = 0; j < n; ++j) x[j] = FloatToBf16(x_values[j]);
    std::vector<float> widened(n, -7.0f), y = y0;
    vec_->widen_bf16(x.data(), widened.data(), n);
    vec_->axpy_bf16(y.data(), x.data(), -0.625f, n);
    // Rounding to nearest: FloatToBf16 (bf16_gemm.h) on the values, exact ties, a NaN and infinities.
    std::vector<float> v = x_values;
    for (uint64_t j = 0; j < n; j += 5) v[j] = WidenBf16(x[j]) + std::ldexp(1.0f, std::ilogb(WidenBf16(x[j])) - 8);
    if (n > 2) v[1] = std::numeric_limits<float>::quiet_NaN(), v[2] = -std::numeric_limits<float>::infinity();
    std::vector<uint16_t> nearest(n, 0);
    vec_->nearest_bf16(v.data(), nearest.data(), n);
    for (uint64_t j = 0; j < n; ++j) {
      ASSERT_EQ(nearest[j], FloatToBf16(v[j])) << j;
      ASSERT_EQ(widened[j], WidenBf16(x[j])) << j;
      EXPECT_NEAR(y[j], double(y0[j]) - 0.625 * double(WidenBf16(x[j])), kUlps * 2) << j;
    }
  }
}

// DWTA's codes against the plain argmax: function counts around the chunk of 16, bins whose
// values tie (the first of equals wins), and queries whose zeros are absent, some bins wholly.
TEST_P(VectorKernelsOnIsa, DwtaCodesMatchTheReference) {
  constexpr uint32_t kPositions = 8;
  constexpr uint64_t kDim = 40;
  std::mt19937_64 rng(7);
  for (const uint64_t functions : {1, 15, 16, 17, 33, 400}) {
    const uint64_t stride = (functions + kDwtaChunk - 1) / kDwtaChunk * kDwtaChunk;
    std::vector<uint32_t> coordinate(stride * kPositions);
    for (uint32_t& c : coordinate) c = uint32_t(rng() % kDim);
    for (const bool query : {false, true}) {
      // Values from a few levels, a third of them zero: ties and absent coordinates are common.
      std::vector<float> v(kDim);
      for (float& x : v) x = rng() % 3 == 0 ? 0.0f : float(int(rng() % 5) - 2);
      std::vector<uint32_t> got(functions + 1, 12345);
      vec_->dwta_codes(v.data(), coordinate.data(), stride, functions, kPositions, query, got.data());
      uint64_t absent = 0;
      for (uint64_t f = 0; f < functions; ++f) {
        uint32_t want = kPositions;
        float best = -INFINITY;
        for (uint32_t p = 0; p < kPositions; ++p) {
          const float x = v[coordinate[p * stride + f]];
          if (query && x == 0.0f) continue;
          if (x > best) best = x, want = p;
        }
        absent += want == kPositions;
        EXPECT_EQ(got[f], want) << "function " << f << " of " << functions << (query ? ", query" : "");
      }
      EXPECT_EQ(got[functions], 12345u) << "wrote past the functions";
      if (!query) {
        EXPECT_EQ(absent, 0u);
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(EveryIsa, VectorKernelsOnIsa, ::testing::ValuesIn(kAllIsas),
                         [](const ::testing::TestParamInfo<CpuIsa>& info) { return std::string(CpuIsaName(info.param)); });

TEST(CpuIsa, NamesParseBackAndUnknownNamesAreRefused) {
  for (CpuIsa isa : kAllIsas) EXPECT_EQ(ParseCpuIsa(CpuIsaName(isa)), isa);
  EXPECT_THROW(ParseCpuIsa("sse9"), std::invalid_argument);
  EXPECT_TRUE(CpuSupports(CpuIsa::kBaseline));
  EXPECT_TRUE(CpuSupports(BestCpuIsa()));
}

// A few SGD and momentum steps of a float model over many label blocks, on each path: the same
// model within a bound set by float rounding (the sums of exponentials run in different orders,
// and the baseline has no fused multiply-add), where a wrong kernel moves parameters by about the
// learning rate times a gradient (1e-4 and more here).
Model<float> TrainOnIsa(CpuIsa isa, float momentum, std::vector<double>* losses) {
  SetActiveCpuIsa(isa);
  EXPECT_EQ(ActiveCpuIsa(), isa);
  const ModelShape shape{40, {24}, 9000};
  constexpr uint32_t kRows = 300;
  Model<float> model = xmlt::testing::RandomModel<float>(shape, 5);
  Model<float> velocity = ZeroModel<float>(shape);
  MlpWorkspace<float> ws(shape, kRows);
  StepRule<float> rule;
  rule.lr = 0.5f;
  rule.momentum = momentum;
  if (momentum != 0) rule.velocity = &velocity;
  for (uint64_t step = 0; step < 4; ++step) {
    const data::SparseBatch batch = xmlt::testing::RandomBatch(kRows, 40, 9000, 100 + step);
    const LossResult loss = TrainStep(&model, batch, rule, &ws);
    losses->push_back(loss.loss_sum / loss.labeled_rows);
  }
  return model;
}

TEST(CpuIsa, TrainingStepsAgreeAcrossPaths) {
  const CpuIsa restore = ActiveCpuIsa();
  for (float momentum : {0.0f, 0.9f}) {
    std::vector<double> reference_losses;
    const Model<float> reference = TrainOnIsa(CpuIsa::kBaseline, momentum, &reference_losses);
    for (CpuIsa isa : {CpuIsa::kAvx2, CpuIsa::kAvx512}) {
      if (!CpuSupports(isa)) continue;
      std::vector<double> losses;
      const Model<float> model = TrainOnIsa(isa, momentum, &losses);
      for (size_t i = 0; i < losses.size(); ++i)
        EXPECT_NEAR(losses[i], reference_losses[i], 1e-5 * reference_losses[i]) << CpuIsaName(isa) << " step " << i;
      double worst = 0;
      for (size_t i = 0; i < model.params.size(); ++i)
        worst = std::max(worst, std::abs(double(model.params[i]) - double(reference.params[i])));
      EXPECT_LT(worst, 2e-6) << CpuIsaName(isa) << " momentum " << momentum;
    }
  }
  SetActiveCpuIsa(restore);
}

// XMLT_CPU_ISA picks the path when the process first asks (the run's summary then names it);
// tested in its own process by the ctest entries that set it (tests/CMakeLists.txt).
TEST(CpuIsa, EnvironmentChoosesThePath) {
  const char* forced = std::getenv("XMLT_CPU_ISA");
  if (forced == nullptr) GTEST_SKIP() << "XMLT_CPU_ISA not set";
  if (!CpuSupports(ParseCpuIsa(forced))) GTEST_SKIP() << "this CPU has no " << forced;
  EXPECT_STREQ(Vec().isa, forced);
}

}  // namespace
}  // namespace xmlt::kernels::cpu
