// bfloat16 conversion and products against a reference: the inputs rounded to bf16, then the
// product summed in double. ctest also runs these with oneDNN held to AVX-512 BF16, so that the
// path of a CPU without AMX is checked on one that has it.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "kernels/cpu/bf16_gemm.h"
#include "tests/kernels/float_bits.h"

namespace xmlt::kernels::cpu {
namespace {

using xmlt::testing::Bits;
using xmlt::testing::FromBits;

TEST(Bf16, RoundsToNearestWithTiesToEven) {
  EXPECT_EQ(FloatToBf16(1.0f), 0x3f80);
  EXPECT_EQ(FloatToBf16(-2.0f), 0xc000);
  // Halfway between 0x3f80 and 0x3f81: ties go to the even 0x3f80; halfway above 0x3f81 to 0x3f82.
  EXPECT_EQ(FloatToBf16(FromBits(0x3f808000u)), 0x3f80);
  EXPECT_EQ(FloatToBf16(FromBits(0x3f818000u)), 0x3f82);
  EXPECT_EQ(FloatToBf16(FromBits(0x3f808001u)), 0x3f81);
  EXPECT_EQ(FloatToBf16(FromBits(0x3f807fffu)), 0x3f80);
  // The largest finite float rounds up to infinity, as the hardware's conversion does.
  EXPECT_EQ(FloatToBf16(std::numeric_limits<float>::max()), 0x7f80);
  EXPECT_EQ(FloatToBf16(std::numeric_limits<float>::infinity()), 0x7f80);
  EXPECT_TRUE(std::isnan(Bf16ToFloat(FloatToBf16(std::numeric_limits<float>::quiet_NaN()))));
  // A NaN whose payload sits only in the low half must not become an infinity.
  EXPECT_TRUE(std::isnan(Bf16ToFloat(FloatToBf16(FromBits(0x7f800001u)))));
}

TEST(Bf16, RoundTripKeepsEightSignificantBits) {
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> dist(-1e3f, 1e3f);
  for (int i = 0; i < 10000; ++i) {
    const float x = dist(rng);
    const float y = Bf16ToFloat(FloatToBf16(x));
    ASSERT_LE(std::abs(y - x), std::ldexp(std::abs(x), -8)) << x;
    ASSERT_EQ(Bits(y) & 0xffffu, 0u);
  }
}

TEST(Bf16, BulkConversionMatchesTheScalarOneOnFiniteValues) {
  std::mt19937 rng(6);
  std::vector<float> in(1000);
  for (float& x : in) x = FromBits(uint32_t(rng()) & 0xbfffffffu);  // finite: exponent below 0xff
  in[0] = 0.0f, in[1] = -0.0f, in[2] = FromBits(0x3f808000u), in[3] = FromBits(0x00000001u);
  std::vector<Bf16> out(in.size());
  ConvertToBf16(in.data(), in.size(), out.data());
  for (size_t i = 0; i < in.size(); ++i) ASSERT_EQ(out[i], FloatToBf16(in[i])) << in[i];
}

struct Stored {
  std::vector<Bf16> values;
  int64_t ld;
};

// rows x cols after op, stored transposed when `transposed`, with a stride wider than needed.
Stored RandomMatrix(int64_t rows, int64_t cols, bool transposed, std::mt19937* rng) {
  std::normal_distribution<float> dist(0.0f, 1.0f);
  const int64_t stored_rows = transposed ? cols : rows, stored_cols = transposed ? rows : cols;
  Stored m{std::vector<Bf16>(size_t(stored_rows * (stored_cols + 3))), stored_cols + 3};
  for (Bf16& v : m.values) v = FloatToBf16(dist(*rng));
  return m;
}

double At(const Stored& m, bool transposed, int64_t i, int64_t j) {
  return Bf16ToFloat(transposed ? m.values[size_t(j * m.ld + i)] : m.values[size_t(i * m.ld + j)]);
}

TEST(Bf16Gemm, MatchesTheDoubleReferenceForEveryLayout) {
  std::string why;
  if (!Bf16Available(&why)) {
    EXPECT_THROW(Bf16GemmOneThread(Op::kNone, Op::kNone, 1, 1, 1, nullptr, 1, nullptr, 1, false, nullptr, 1),
                 std::runtime_error);
    GTEST_SKIP() << "no native bf16 here: " << why;
  }
  std::mt19937 rng(7);
  // Sizes that fit no tile or vector width, and one that spans several AMX tiles.
  for (const auto& [m, n, k] : {std::tuple<int64_t, int64_t, int64_t>{37, 29, 45}, {1, 1, 1}, {70, 130, 300}}) {
    for (bool ta : {false, true}) {
      for (bool tb : {false, true}) {
        for (bool accumulate : {false, true}) {
          const Stored a = RandomMatrix(m, k, ta, &rng), b = RandomMatrix(k, n, tb, &rng);
          const int64_t ldc = n + 5;
          std::vector<float> c(size_t(m * ldc));
          std::normal_distribution<float> dist(0.0f, 1.0f);
          for (float& v : c) v = dist(rng);
          const std::vector<float> before = c;
          Bf16GemmOneThread(ta ? Op::kTranspose : Op::kNone, tb ? Op::kTranspose : Op::kNone, m, n, k,
                            a.values.data(), a.ld, b.values.data(), b.ld, accumulate, c.data(), ldc);
          for (int64_t i = 0; i < m; ++i) {
            for (int64_t j = 0; j < ldc; ++j) {
              const size_t at = size_t(i * ldc + j);
              if (j >= n) {  // past the n columns: untouched
                ASSERT_EQ(c[at], before[at]);
                continue;
              }
              double sum = accumulate ? before[at] : 0.0, magnitude = std::abs(sum);
              for (int64_t p = 0; p < k; ++p) {
                const double term = At(a, ta, i, p) * At(b, tb, p, j);
                sum += term;
                magnitude += std::abs(term);
              }
              // Exact products of bf16 values summed in fp32: at most k + 1 roundings of 2^-24,
              // each of at most the sum of the magnitudes.
              ASSERT_NEAR(c[at], sum, double(k + 1) * 0x1p-24 * magnitude)
                  << m << "x" << n << "x" << k << (ta ? " A^T" : "") << (tb ? " B^T" : "")
                  << (accumulate ? " +C" : "") << " at " << i << "," << j;
            }
          }
        }
      }
    }
  }
}

TEST(Bf16Gemm, AnEmptyInnerDimensionGivesZerosOrLeavesC) {
  if (!Bf16Available(nullptr)) GTEST_SKIP() << "no native bf16 here";
  std::vector<float> c{1, 2, 3, 4};
  Bf16GemmOneThread(Op::kNone, Op::kNone, 2, 2, 0, nullptr, 1, nullptr, 2, true, c.data(), 2);
  EXPECT_EQ(c, (std::vector<float>{1, 2, 3, 4}));
  Bf16GemmOneThread(Op::kNone, Op::kNone, 2, 2, 0, nullptr, 1, nullptr, 2, false, c.data(), 2);
  EXPECT_EQ(c, (std::vector<float>{0, 0, 0, 0}));
}

}  // namespace
}  // namespace xmlt::kernels::cpu
