// The Adasum operator and merge: its properties, a double-precision reference of the documented
// tree over 1..8 devices and uneven tensors, per-tensor independence, determinism, and momentum.
#include "tests/test_support.h"
#include "merge/adasum.h"
#include "tests/merge/merge_test_support.h"

#include <gtest/gtest.h>
#include <tbb/task_arena.h>

#include <cfloat>
#include <cmath>
#include <cstring>
#include <random>
#include <stdexcept>
#include <vector>

#include "merge/merger.h"

namespace xmlt::merge {
namespace {

using testing::Replicas;

// Tensor offsets of the given sizes, and their total.
std::vector<size_t> Offsets(const std::vector<size_t>& sizes, size_t* total) {
  std::vector<size_t> offsets;
  *total = 0;
  for (size_t s : sizes) {
    offsets.push_back(*total);
    *total += s;
  }
  return offsets;
}

// Deltas that share a direction (so the coefficients are far from 1) plus each device's noise.
Replicas CorrelatedReplicas(size_t n, const std::vector<size_t>& sizes, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(0.0f, 1.0f);
  Replicas r;
  size_t total = 0;
  r.tensors = Offsets(sizes, &total);
  std::vector<float> common(total);
  for (auto& x : common) x = dist(rng);
  r.data.assign(n, std::vector<float>(total));
  for (size_t i = 0; i < n; ++i)
    for (size_t j = 0; j < total; ++j) r.data[i][j] = 0.7f * common[j] + 0.5f * dist(rng);
  return r;
}

// --- double-precision reference, written from the paper and the documented rule ----------------

using Vec = std::vector<double>;

Vec RefPair(const Vec& a, const Vec& b) {
  double ab = 0, aa = 0, bb = 0;
  for (size_t j = 0; j < a.size(); ++j) {
    ab += a[j] * b[j];
    aa += a[j] * a[j];
    bb += b[j] * b[j];
  }
  const double ca = aa >= DBL_MIN ? 1 - ab / (2 * aa) : 1;
  const double cb = bb >= DBL_MIN ? 1 - ab / (2 * bb) : 1;
  Vec out(a.size());
  for (size_t j = 0; j < a.size(); ++j) out[j] = ca * a[j] + cb * b[j];
  return out;
}

// n = 2^k + m: fold adjacent pairs (0,1)..(2m-2,2m-1), then the power-of-two tree.
Vec RefTree(std::vector<Vec> ops) {
  size_t power = 1;
  while (power * 2 <= ops.size()) power *= 2;
  const size_t m = ops.size() - power;
  std::vector<Vec> level;
  for (size_t i = 0; i < m; ++i) level.push_back(RefPair(ops[2 * i], ops[2 * i + 1]));
  for (size_t i = 2 * m; i < ops.size(); ++i) level.push_back(ops[i]);
  while (level.size() > 1) {
    std::vector<Vec> next;
    for (size_t j = 0; j < level.size(); j += 2) next.push_back(RefPair(level[j], level[j + 1]));
    level = std::move(next);
  }
  return level[0];
}

// Per tensor.
Vec RefAdasum(const std::vector<Vec>& deltas, std::vector<size_t> offsets) {
  const size_t total = deltas[0].size();
  if (offsets.empty()) offsets.push_back(0);
  offsets.push_back(total);
  Vec out(total);
  for (size_t t = 0; t + 1 < offsets.size(); ++t) {
    std::vector<Vec> ops;
    for (const Vec& d : deltas)
      ops.emplace_back(d.begin() + offsets[t], d.begin() + offsets[t + 1]);
    if (ops[0].empty()) continue;
    const Vec r = RefTree(ops);
    std::copy(r.begin(), r.end(), out.begin() + offsets[t]);
  }
  return out;
}

std::vector<Vec> ToDouble(const Replicas& r) {
  std::vector<Vec> out;
  for (const auto& d : r.data) out.emplace_back(d.begin(), d.end());
  return out;
}

// ||got - ref|| / ||ref|| over [begin, end) below 100 float epsilons.
void ExpectClose(const Vec& ref, const std::vector<float>& got, size_t begin, size_t end) {
  double err = 0, norm = 0;
  for (size_t j = begin; j < end; ++j) {
    err += (got[j] - ref[j]) * (got[j] - ref[j]);
    norm += ref[j] * ref[j];
  }
  EXPECT_LE(std::sqrt(err), 100 * FLT_EPSILON * std::sqrt(norm))
      << "[" << begin << ", " << end << ")";
}

void ExpectAllEqual(const Replicas& r) {
  for (size_t i = 1; i < r.data.size(); ++i)
    ASSERT_TRUE(xmlt::testing::SameBits(r.data[0].data(), r.data[i].data(), r.data[0].size()))
        << "replica " << i;
}

std::vector<float> TwoWay(std::vector<float> a, std::vector<float> b) {
  Replicas r{{std::move(a), std::move(b)}, {}};
  AdasumAllReduce(r.View(), nullptr, nullptr);
  ExpectAllEqual(r);
  return r.data[0];
}

void ExpectFloats(const std::vector<float>& expected, const std::vector<float>& got) {
  ASSERT_EQ(expected.size(), got.size());
  for (size_t j = 0; j < got.size(); ++j)
    EXPECT_NEAR(expected[j], got[j], 1e-6 * (1 + std::abs(expected[j]))) << "parameter " << j;
}

// --- the tree ------------------------------------------------------------------------------------

TEST(PairwiseTree, FoldsTheExcessAdjacentPairsFirst) {
  using Levels = std::vector<std::vector<std::pair<size_t, size_t>>>;
  auto levels = [](size_t n) {
    Levels out;
    for (const auto& level : PairwiseTreeLevels(n)) {
      out.emplace_back();
      for (const TreePair& p : level) out.back().emplace_back(p.left, p.right);
    }
    return out;
  };
  EXPECT_EQ(Levels{}, levels(0));
  EXPECT_EQ(Levels{}, levels(1));
  EXPECT_EQ((Levels{{{0, 1}}}), levels(2));
  EXPECT_EQ((Levels{{{0, 1}}, {{0, 2}}}), levels(3));
  EXPECT_EQ((Levels{{{0, 1}, {2, 3}}, {{0, 2}}}), levels(4));
  EXPECT_EQ((Levels{{{0, 1}}, {{0, 2}, {3, 4}}, {{0, 3}}}), levels(5));
  EXPECT_EQ((Levels{{{0, 1}, {2, 3}}, {{0, 2}, {4, 5}}, {{0, 4}}}), levels(6));
  EXPECT_EQ((Levels{{{0, 1}, {2, 3}, {4, 5}}, {{0, 2}, {4, 6}}, {{0, 4}}}), levels(7));
  EXPECT_EQ((Levels{{{0, 1}, {2, 3}, {4, 5}, {6, 7}}, {{0, 2}, {4, 6}}, {{0, 4}}}), levels(8));
}

// --- the operator --------------------------------------------------------------------------------

TEST(AdasumOperator, OrthogonalInputsGiveTheSum) {
  ExpectFloats({3, -2, 0}, TwoWay({3, 0, 0}, {0, -2, 0}));
  ExpectFloats({1, 1, 2, 2}, TwoWay({1, 1, 0, 0}, {0, 0, 2, 2}));
}

TEST(AdasumOperator, ParallelInputsGiveTheAverage) {
  ExpectFloats({1, -2, 3}, TwoWay({1, -2, 3}, {1, -2, 3}));
  // a and 3a: (1 - 3/2) a + (1 - 1/6) 3a = 2a, the average.
  ExpectFloats({2, 4}, TwoWay({1, 2}, {3, 6}));
}

TEST(AdasumOperator, ZeroOperandReturnsTheOther) {
  ExpectFloats({1, -2, 3}, TwoWay({0, 0, 0}, {1, -2, 3}));
  ExpectFloats({1, -2, 3}, TwoWay({1, -2, 3}, {0, 0, 0}));
  ExpectFloats({0, 0, 0}, TwoWay({0, 0, 0}, {0, 0, 0}));
}

TEST(AdasumOperator, OppositeInputs) {
  // b = -a: both coefficients are 3/2 and the result is 0; b = -3a: (1 + 3/2) a - (1 + 1/6) 3a =
  // -a.
  ExpectFloats({0, 0}, TwoWay({1, 2}, {-1, -2}));
  ExpectFloats({-1, -2}, TwoWay({1, 2}, {-3, -6}));
}

TEST(AdasumOperator, HandComputedGeneralCase) {
  // a = (1, 0), b = (1, 1): a.b = 1, |a|^2 = 1, |b|^2 = 2 -> 0.5 a + 0.75 b = (1.25, 0.75).
  ExpectFloats({1.25, 0.75}, TwoWay({1, 0}, {1, 1}));
}

TEST(AdasumOperator, MatchesDoubleReferenceOverDevicesAndUnevenTensors) {
  // 20000 spans several fixed chunks, unevenly.
  const std::vector<size_t> sizes = {1, 3, 7, 1000, 20000, 5};
  for (size_t n = 1; n <= 8; ++n) {
    SCOPED_TRACE(::testing::Message() << "n=" << n);
    Replicas r = CorrelatedReplicas(n, sizes, static_cast<uint32_t>(n));
    const Vec ref = RefAdasum(ToDouble(r), r.tensors);
    AdasumAllReduce(r.View(), nullptr, nullptr);
    ExpectAllEqual(r);
    for (size_t t = 0; t < sizes.size(); ++t)
      ExpectClose(ref, r.data[0], r.tensors[t], r.tensors[t] + sizes[t]);
  }
}

TEST(AdasumOperator, EmptyTensorListIsOneTensor) {
  for (size_t n : {3, 4}) {
    Replicas r = CorrelatedReplicas(n, {12345}, 9);
    r.tensors.clear();
    const Vec ref = RefAdasum(ToDouble(r), {});
    AdasumAllReduce(r.View(), nullptr, nullptr);
    ExpectClose(ref, r.data[0], 0, 12345);
  }
}

TEST(AdasumOperator, TensorsAreIndependent) {
  const std::vector<size_t> sizes = {7, 1000, 9000, 3};
  for (size_t n : {2, 5, 8}) {
    SCOPED_TRACE(::testing::Message() << "n=" << n);
    const Replicas original = CorrelatedReplicas(n, sizes, 3);
    Replicas base = original, scaled = original;
    // Scaling tensor 2 of one device changes the coefficients of tensor 2 only.
    for (size_t j = scaled.tensors[2]; j < scaled.tensors[3]; ++j) scaled.data[1][j] *= 3.0f;
    AdasumAllReduce(base.View(), nullptr, nullptr);
    AdasumAllReduce(scaled.View(), nullptr, nullptr);
    for (size_t t : {0, 1, 3}) {
      const size_t begin = base.tensors[t];
      EXPECT_TRUE(xmlt::testing::SameBits(base.data[0].data() + begin, scaled.data[0].data() + begin, sizes[t]))
          << "tensor " << t;
    }
    EXPECT_FALSE(xmlt::testing::SameBits(base.data[0].data() + base.tensors[2],
                             scaled.data[0].data() + base.tensors[2], sizes[2]));
  }
}

TEST(AdasumOperator, SameBitsWhateverTheThreadCount) {
  const std::vector<size_t> sizes = {100, 200003, 7, 65536};
  const Replicas start = CorrelatedReplicas(6, sizes, 21);
  auto run_in = [&](int threads) {
    Replicas r = start;
    tbb::task_arena(threads).execute([&] { AdasumAllReduce(r.View(), nullptr, nullptr); });
    return r.data[5];
  };
  const std::vector<float> one = run_in(1);
  for (int threads : {4, 2, 1})
    ASSERT_TRUE(xmlt::testing::SameBits(one.data(), run_in(threads).data(), one.size()))
        << threads << " threads";
}

TEST(AdasumOperator, PrepareAndFinishSeeEveryBlockOnce) {
  const size_t n = 3;
  Replicas r = CorrelatedReplicas(n, {5, 30000}, 4);
  std::vector<int> prepared(n * r.data[0].size(), 0), finished(r.data[0].size(), 0);
  const Vec ref = RefAdasum(ToDouble(r), r.tensors);
  AdasumAllReduce(
      r.View(),
      [&](size_t i, size_t begin, size_t end, float*) {
        for (size_t j = begin; j < end; ++j) ++prepared[i * r.data[0].size() + j];
      },
      [&](size_t begin, size_t end, float* values) {
        for (size_t j = begin; j < end; ++j) {
          ++finished[j];
          values[j - begin] = -values[j - begin];
        }
      });
  for (int c : prepared) ASSERT_EQ(1, c);
  for (int c : finished) ASSERT_EQ(1, c);
  Vec negated = ref;
  for (double& x : negated) x = -x;
  ExpectClose(negated, r.data[2], 0, ref.size());
}

TEST(AdasumOperator, RejectsBadArgumentsWithoutTouchingTheReplicas) {
  Replicas r = CorrelatedReplicas(2, {4, 4}, 5);
  const Replicas original = r;
  for (std::vector<size_t> bad : {std::vector<size_t>{1, 4}, {0, 9}, {0, 6, 3}}) {
    r.tensors = bad;
    EXPECT_THROW(AdasumAllReduce(r.View(), nullptr, nullptr), std::invalid_argument);
  }
  EXPECT_THROW(AdasumAllReduce(ReplicaSet{}, nullptr, nullptr), std::invalid_argument);
  ReplicaSet null_params = r.View();
  null_params.tensors.clear();
  null_params.members[1].params = nullptr;
  EXPECT_THROW(AdasumAllReduce(null_params, nullptr, nullptr), std::invalid_argument);
  EXPECT_EQ(original.data, r.data);
}

// --- the merge -----------------------------------------------------------------------------------

std::unique_ptr<Merger> Adasum(double momentum, MomentumMode mode) {
  MergeOptions options;
  options.momentum = momentum;
  options.momentum_mode = mode;
  return MakeAdasumMerger(options);
}

// w = (1, 2), w_p = (0, 2), gamma = 0.5, so gamma (w - w_p) = (0.5, 0). Both devices moved by
// d0 = (1, 0) and d1 = (1, 1) from their starting point: Adasum(d0, d1) = (1.25, 0.75).
//  kHeavy:    start = w = (1, 2); w' = w + D + (0.5, 0) = (2.75, 2.75); replicas -> w'.
//  kNesterov: start = w + (0.5, 0) = (1.5, 2); w' = start + D = (2.75, 2.75);
//             replicas -> w' + 0.5 (w' - w) = (3.625, 3.125).
// Either way w_p <- (1, 2).
TEST(AdasumMerger, HeavyMomentumHandComputed) {
  auto merger = Adasum(0.5, MomentumMode::kHeavy);
  EXPECT_EQ("adasum", merger->name());
  GlobalModel global{{1, 2}, {0, 2}};
  Replicas r{{{2, 2}, {2, 3}}, {}};
  const MergeOutcome out = merger->Merge(r.View(), MergeInput{}, &global);
  EXPECT_EQ((std::vector<double>{1.0, 1.0}), out.weights);
  EXPECT_FALSE(out.perturbed);
  ExpectFloats({2.75, 2.75}, global.current());
  ExpectFloats({1, 2}, global.previous());
  ExpectFloats({2.75, 2.75}, r.data[0]);
  ExpectFloats({2.75, 2.75}, r.data[1]);
}

TEST(AdasumMerger, NesterovMomentumHandComputed) {
  auto merger = Adasum(0.5, MomentumMode::kNesterov);
  GlobalModel global{{1, 2}, {0, 2}};
  Replicas r{{{2.5, 2}, {2.5, 3}}, {}};
  merger->Merge(r.View(), MergeInput{}, &global);
  ExpectFloats({2.75, 2.75}, global.current());
  ExpectFloats({1, 2}, global.previous());
  ExpectFloats({3.625, 3.125}, r.data[0]);
  ExpectFloats({3.625, 3.125}, r.data[1]);
  // A second round in which no device moved: every delta is 0 (the look-ahead is recomputed
  // from w and w_p, not stored), so w'' = start = (3.625, 3.125) and the replicas go to
  // w'' + 0.5 (w'' - w') = (4.0625, 3.3125).
  merger->Merge(r.View(), MergeInput{}, &global);
  ExpectFloats({3.625, 3.125}, global.current());
  ExpectFloats({2.75, 2.75}, global.previous());
  ExpectFloats({4.0625, 3.3125}, r.data[0]);
  ExpectFloats({4.0625, 3.3125}, r.data[1]);
}

TEST(AdasumMerger, MatchesReferenceWithMomentumOverDeviceCounts) {
  const std::vector<size_t> sizes = {3, 1000, 7, 10000};
  const double gamma = 0.9;
  for (MomentumMode mode : {MomentumMode::kHeavy, MomentumMode::kNesterov}) {
    for (size_t n : {1, 2, 3, 4, 5, 6, 7, 8}) {
      SCOPED_TRACE(::testing::Message()
                   << "n=" << n << " nesterov=" << (mode == MomentumMode::kNesterov));
      Replicas deltas = CorrelatedReplicas(n, sizes, static_cast<uint32_t>(10 + n));
      const Replicas g = CorrelatedReplicas(2, sizes, 77);
      GlobalModel global{g.data[0], g.data[1]};
      const size_t total = global.current().size();
      // Where the replicas started (in double) and where local training left them.
      Vec start(total), step(total);
      for (size_t j = 0; j < total; ++j) {
        step[j] = gamma * (double(global.current()[j]) - global.previous()[j]);
        start[j] = global.current()[j] + (mode == MomentumMode::kNesterov ? step[j] : 0.0);
      }
      Replicas r = deltas;
      for (auto& x : r.data)
        for (size_t j = 0; j < total; ++j) x[j] = float(start[j] + x[j]);
      // The reference takes the deltas the replicas actually hold.
      std::vector<Vec> held(n, Vec(total));
      for (size_t i = 0; i < n; ++i)
        for (size_t j = 0; j < total; ++j) held[i][j] = double(r.data[i][j]) - start[j];
      const Vec sum = RefAdasum(held, r.tensors);
      Vec expected(total), next_start(total);
      for (size_t j = 0; j < total; ++j) {
        expected[j] = start[j] + sum[j] + (mode == MomentumMode::kHeavy ? step[j] : 0.0);
        next_start[j] =
            expected[j] +
            (mode == MomentumMode::kNesterov ? gamma * (expected[j] - global.current()[j]) : 0.0);
      }
      const std::vector<float> old_current = global.current();
      Adasum(gamma, mode)->Merge(r.View(), MergeInput{}, &global);
      EXPECT_EQ(old_current, global.previous());
      ExpectClose(expected, global.current(), 0, total);
      ExpectAllEqual(r);
      ExpectClose(next_start, r.data[0], 0, total);
    }
  }
}

TEST(AdasumMerger, RejectsInconsistentInputs) {
  auto merger = Adasum(0.9, MomentumMode::kHeavy);
  Replicas r{{{1, 2, 3}, {4, 5, 6}}, {}};
  GlobalModel global{{0, 0, 0}, {0, 0, 0}};
  MergeInput three;
  three.batch = {1, 2, 3};
  EXPECT_THROW(merger->Merge(r.View(), three, &global), std::invalid_argument);
  GlobalModel small{{0, 0}, {0, 0}};
  EXPECT_THROW(merger->Merge(r.View(), MergeInput{}, &small), std::invalid_argument);
  EXPECT_THROW(merger->Merge(r.View(), MergeInput{}, nullptr), std::invalid_argument);
  EXPECT_THROW(merger->Merge(ReplicaSet{}, MergeInput{}, &global), std::invalid_argument);
  r.tensors = {0, 5};
  EXPECT_THROW(merger->Merge(r.View(), MergeInput{}, &global), std::invalid_argument);
  EXPECT_EQ((std::vector<float>{1, 2, 3}), r.data[0]);
  EXPECT_EQ((std::vector<float>{0, 0, 0}), global.current());
}

}  // namespace
}  // namespace xmlt::merge
