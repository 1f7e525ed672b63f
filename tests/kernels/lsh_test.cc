// SLIDE's hash families and tables (kernels/lsh) against brute force on small data: SimHash codes
// agree as often as the angle between two vectors predicts (1 - angle / pi); DWTA codes agree more
// often the more two vectors rank their coordinates alike, and one time in eight for unrelated
// ones; the tables find every label by its own row, recover a query's true top-5 labels far more
// often than a random sample of the same size (and, on a planted case, nearly all of them), and rehashing only the changed rows gives the
// tables a full rebuild gives.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>
#include <vector>

#include "kernels/lsh/active_set_recall.h"
#include "kernels/lsh/hash_family.h"
#include "kernels/lsh/label_tables.h"
#include "kernels/lsh/rebuild_schedule.h"

namespace xmlt::kernels::lsh {
namespace {

std::vector<float> Normal(size_t n, std::mt19937_64& rng) {
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> v(n);
  for (float& x : v) x = normal(rng);
  return v;
}

double AgreeingCodes(const HashFamily& family, const std::vector<float>& a, const std::vector<float>& b, bool query) {
  std::vector<uint32_t> ca(family.k * family.l), cb(family.k * family.l);
  family.Hash(a.data(), query, ca.data());
  family.Hash(b.data(), query, cb.data());
  size_t same = 0;
  for (size_t f = 0; f < ca.size(); ++f) same += ca[f] == cb[f];
  return double(same) / double(ca.size());
}

TEST(SimHash, CodesAgreeAsOftenAsTheAngleBetweenTheVectorsPredicts) {
  const size_t dim = 128;
  const auto family = MakeSimHash(9, 50, dim, 3);
  std::mt19937_64 rng(5);
  double previous = 1.1;
  for (const double angle : {0.1, 0.25, 0.4, 0.6, 0.8}) {  // in units of pi
    double agree = 0;
    const int pairs = 40;
    for (int p = 0; p < pairs; ++p) {
      std::vector<float> x = Normal(dim, rng), z = Normal(dim, rng);
      // z orthogonal to x, both of unit length; y at `angle` from x.
      auto dot = [&](const std::vector<float>& a, const std::vector<float>& b) {
        return std::inner_product(a.begin(), a.end(), b.begin(), 0.0);
      };
      const double xx = dot(x, x);
      const double zx = dot(z, x);
      for (size_t i = 0; i < dim; ++i) z[i] -= float(zx / xx) * x[i];
      const double nx = std::sqrt(xx), nz = std::sqrt(dot(z, z));
      std::vector<float> y(dim);
      for (size_t i = 0; i < dim; ++i)
        y[i] = float(std::cos(angle * M_PI) * x[i] / nx + std::sin(angle * M_PI) * z[i] / nz);
      agree += AgreeingCodes(*family, x, y, false);
    }
    agree /= pairs;
    std::printf("SimHash: angle %.2f pi: codes agree %.3f (1 - angle / pi = %.3f)\n", angle, agree, 1 - angle);
    EXPECT_NEAR(agree, 1 - angle, 0.06) << "angle " << angle << " pi";
    EXPECT_LT(agree, previous);
    previous = agree;
  }
}

TEST(DwtaHash, CodesAgreeMoreOftenTheMoreTwoVectorsRankTheirCoordinatesAlike) {
  const size_t dim = 128;
  const auto family = MakeDwtaHash(8, 50, dim, 3);
  std::mt19937_64 rng(9);
  std::vector<float> x = Normal(dim, rng);
  EXPECT_EQ(AgreeingCodes(*family, x, x, false), 1.0);
  std::vector<float> scaled(x);
  for (float& v : scaled) v = 3 * v + 1;  // the same ranking: the same codes
  EXPECT_EQ(AgreeingCodes(*family, x, scaled, false), 1.0);
  double previous = 1.0;
  for (const float noise : {0.05f, 0.3f, 1.0f, 3.0f}) {
    double agree = 0;
    const int pairs = 40;
    for (int p = 0; p < pairs; ++p) {
      std::vector<float> a = Normal(dim, rng), b = a, e = Normal(dim, rng);
      for (size_t i = 0; i < dim; ++i) b[i] += noise * e[i];
      agree += AgreeingCodes(*family, a, b, false);
    }
    agree /= pairs;
    std::printf("DWTA: noise %.2f: codes agree %.3f\n", noise, agree);
    EXPECT_LT(agree, previous) << "noise " << noise;
    previous = agree;
  }
  double unrelated = 0;
  for (int p = 0; p < 40; ++p) unrelated += AgreeingCodes(*family, Normal(dim, rng), Normal(dim, rng), false);
  unrelated /= 40;
  std::printf("DWTA: unrelated vectors: codes agree %.3f (1/8 = 0.125)\n", unrelated);
  EXPECT_NEAR(unrelated, 0.125, 0.03);
}

TEST(DwtaHash, AQuerysZerosAreAbsentAndItsEmptyBinsBorrowCodes) {
  const size_t dim = 64;
  const auto family = MakeDwtaHash(4, 10, dim, 1);
  std::vector<float> sparse(dim, 0.0f);
  sparse[3] = 1.0f, sparse[17] = 2.0f, sparse[40] = 0.5f;
  std::vector<uint32_t> codes(40), again(40);
  family->Hash(sparse.data(), true, codes.data());
  family->Hash(sparse.data(), true, again.data());
  EXPECT_EQ(codes, again);
  for (const uint32_t c : codes) EXPECT_LT(c, 8u);
  // Three coordinates fill at most three bins of each permutation; the rest borrowed theirs.
  std::vector<float> zeros(dim, 0.0f);
  family->Hash(zeros.data(), true, codes.data());
  for (const uint32_t c : codes) EXPECT_EQ(c, 0u);
}

TEST(HashFamily, RefusesEmptyShapesAndUnknownNames) {
  EXPECT_THROW(MakeSimHash(0, 1, 8, 1), std::invalid_argument);
  EXPECT_THROW(MakeDwtaHash(1, 1, 0, 1), std::invalid_argument);
  EXPECT_THROW(MakeHashFamily("minhash", 1, 1, 8, 1), std::invalid_argument);
  EXPECT_NO_THROW(MakeHashFamily("dwta", 2, 3, 8, 1));
}

// Rows of `labels` x `dim`, random normal.
std::vector<float> RandomRows(size_t labels, size_t dim, uint64_t seed) {
  std::mt19937_64 rng(seed);
  return Normal(labels * dim, rng);
}

TEST(LabelTables, EveryLabelIsFoundByItsOwnRow) {
  const size_t labels = 2000, dim = 32;
  const std::vector<float> rows = RandomRows(labels, dim, 2);
  for (const char* name : {"simhash", "dwta"}) {
    LabelTables tables(MakeHashFamily(name, 4, 8, dim, 7), labels);
    tables.Build(rows.data());
    std::vector<uint32_t> seen, found;
    for (uint32_t label = 0; label < labels; ++label) {
      found.clear();
      tables.Query(rows.data() + size_t(label) * dim, labels, &seen, label + 1, &found);
      ASSERT_NE(std::find(found.begin(), found.end(), label), found.end()) << name << ": label " << label;
      std::vector<uint32_t> sorted = found;
      std::sort(sorted.begin(), sorted.end());
      ASSERT_EQ(std::unique(sorted.begin(), sorted.end()), sorted.end()) << name << ": a label twice";
    }
  }
}

// The tables' purpose: a hidden activation's active set holds its largest logits. Against the
// brute-force top 5 of w_i . h, the share recovered must be five times what a random sample of
// the same size recovers.
TEST(LabelTables, TheActiveSetRecoversTheTrueTopFiveFarBetterThanARandomSample) {
  const size_t labels = 4000, dim = 32, queries = 200;
  const std::vector<float> rows = RandomRows(labels, dim, 4);
  std::mt19937_64 rng(6);
  // K for 4,000 labels: 512 SimHash buckets, 512 DWTA buckets.
  for (const auto& [name, k] : {std::pair{"simhash", 9}, std::pair{"dwta", 3}}) {
    LabelTables tables(MakeHashFamily(name, size_t(k), 20, dim, 8), labels);
    tables.Build(rows.data());
    std::vector<uint32_t> seen, active;
    double recovered = 0, sampled = 0;
    for (size_t q = 0; q < queries; ++q) {
      std::vector<float> h = Normal(dim, rng);
      for (float& x : h) x = std::max(x, 0.0f);  // a ReLU activation
      std::vector<std::pair<double, uint32_t>> logits(labels);
      for (uint32_t i = 0; i < labels; ++i)
        logits[i] = {std::inner_product(h.begin(), h.end(), rows.begin() + int64_t(i * dim), 0.0), i};
      std::partial_sort(logits.begin(), logits.begin() + 5, logits.end(), std::greater<>());
      active.clear();
      tables.Query(h.data(), 128, &seen, uint32_t(q + 1), &active);
      std::vector<char> in(labels, 0);
      for (const uint32_t a : active) in[a] = 1;
      for (int t = 0; t < 5; ++t) recovered += in[logits[size_t(t)].second];
      sampled += 5.0 * double(active.size()) / double(labels);
    }
    std::printf("%s: the active sets (%.0f labels of %zu on average) recover %.2f of the true top 5; a random "
                "sample of that size %.2f\n",
                name, sampled / 5 / queries * labels, labels, recovered / (5.0 * queries), sampled / (5.0 * queries));
    EXPECT_GT(recovered, 5 * sampled) << name;  // measured: 7.4x (SimHash) and 9.8x (DWTA)
  }
}

// A planted case for MeasureActiveSetRecall (what benchmarks/hash_quality.cc reports): each query
// has five labels whose rows are the query itself, scaled, plus a little noise, among random rows;
// those five are its true top 5, and tables that work hold most of them, where a random set of the
// same size holds its small share of the labels.
TEST(ActiveSetRecall, PlantedNeighboursAreRecoveredFarMoreOftenThanByARandomSet) {
  const size_t labels = 3000, dim = 32, queries = 100, top = 5;
  std::vector<float> rows = RandomRows(labels, dim, 14);
  std::mt19937_64 rng(15);
  std::vector<float> h(queries * dim);
  for (size_t q = 0; q < queries; ++q) {
    const std::vector<float> v = Normal(dim, rng);
    // A ReLU activation, scaled to length 4 (a random row's logit has a spread of 4): each query's
    // planted logits (3 x 16) stand above the random rows' and the other queries' planted rows'.
    double norm = 0;
    for (size_t i = 0; i < dim; ++i) norm += double(std::max(v[i], 0.0f)) * std::max(v[i], 0.0f);
    for (size_t i = 0; i < dim; ++i) h[q * dim + i] = float(4 * std::max(v[i], 0.0f) / std::sqrt(norm));
    for (size_t t = 0; t < top; ++t) {  // labels q*5 .. q*5+4: the query, 3x, with 5% noise
      const std::vector<float> noise = Normal(dim, rng);
      for (size_t i = 0; i < dim; ++i) rows[(q * top + t) * dim + i] = 3 * h[q * dim + i] + 0.15f * noise[i];
    }
  }
  const std::vector<uint32_t> truth = TopLabels(rows.data(), nullptr, labels, dim, h.data(), queries, top);
  for (size_t q = 0; q < queries; ++q)  // planted well: the top 5 are the planted labels
    for (size_t t = 0; t < top; ++t) ASSERT_EQ(truth[q * top + t] / top, q) << "query " << q;
  for (const auto& [name, k] : {std::pair{"simhash", 9}, std::pair{"dwta", 3}}) {
    LabelTables tables(MakeHashFamily(name, size_t(k), 20, dim, 16), labels);
    tables.Build(rows.data());
    const ActiveSetRecall r = MeasureActiveSetRecall(tables, h.data(), queries, truth, top, 128, 17);
    std::printf("%s: planted top 5 recovered %.2f by the active sets (%.0f labels), %.3f by random sets\n", name,
                r.recall, r.active, r.random_recall);
    EXPECT_GT(r.recall, 0.8) << name;
    EXPECT_GT(r.recall, 4 * r.random_recall) << name;
    EXPECT_LT(r.active, 0.5 * labels) << name;  // the tables chose, rather than return everything
    // The random set's share is its size over the labels, within sampling noise.
    EXPECT_NEAR(r.random_recall, r.active / labels, 0.05) << name;
  }
  EXPECT_THROW(MeasureActiveSetRecall(LabelTables(MakeHashFamily("dwta", 2, 2, dim, 1), labels), h.data(), queries,
                                      truth, top + 1, 128, 1),
               std::invalid_argument);
}

TEST(LabelTables, RehashingTheChangedRowsGivesTheTablesOfAFullBuild) {
  const size_t labels = 1500, dim = 16;
  std::vector<float> rows = RandomRows(labels, dim, 10);
  LabelTables incremental(MakeHashFamily("dwta", 3, 6, dim, 2), labels, 18, 5);
  incremental.Build(rows.data());
  std::vector<uint32_t> changed;
  std::mt19937_64 rng(12);
  for (uint32_t label = 0; label < labels; label += 7) {
    changed.push_back(label);
    for (size_t i = 0; i < dim; ++i) rows[label * dim + i] = Normal(1, rng)[0];
  }
  incremental.Rehash(rows.data(), changed);
  LabelTables full(MakeHashFamily("dwta", 3, 6, dim, 2), labels, 18, 5);
  full.Build(rows.data());
  std::vector<uint32_t> seen_a, seen_b, a, b;
  for (uint32_t q = 0; q < 100; ++q) {
    a.clear(), b.clear();
    const std::vector<float> h = Normal(dim, rng);
    incremental.Query(h.data(), 16, &seen_a, q + 1, &a);
    full.Query(h.data(), 16, &seen_b, q + 1, &b);
    ASSERT_EQ(a, b) << "query " << q;
  }
  EXPECT_THROW(incremental.Rehash(rows.data(), {uint32_t(labels)}), std::out_of_range);
}

TEST(RebuildSchedule, FirstAfterFiftyUpdatesThenGapsGrowingByTheFactor) {
  const RebuildSchedule schedule(50, 1.5);
  std::vector<uint64_t> points;
  for (uint64_t u = 1; u <= 1000; ++u)
    if (schedule.DueAfter(u)) points.push_back(u);
  // Gaps 50, 75, 113 (112.5 rounded), 170 (169.5), 255 (255), 383 (382.5): points 50, 125, 238, 408, 663.
  EXPECT_EQ(points, (std::vector<uint64_t>{50, 125, 238, 408, 663}));
  EXPECT_EQ(schedule.NextAfter(0), 50u);
  EXPECT_EQ(schedule.NextAfter(50), 125u);
  EXPECT_EQ(schedule.NextAfter(124), 125u);
  const RebuildSchedule every(3, 1.0);
  EXPECT_TRUE(every.DueAfter(3));
  EXPECT_TRUE(every.DueAfter(9));
  EXPECT_FALSE(every.DueAfter(10));
  EXPECT_THROW(RebuildSchedule(0, 1.1), std::invalid_argument);
  EXPECT_THROW(RebuildSchedule(50, 0.9), std::invalid_argument);
}

}  // namespace
}  // namespace xmlt::kernels::lsh
