// Property tests of the CPU partitioned sum against serial double-precision references, over
// replica counts, sizes smaller than and not divisible by the replica count, and thread counts; and
// its documented summation order, bit for bit.
#include <gtest/gtest.h>
#include <tbb/task_arena.h>

#include <atomic>
#include <cmath>
#include <cstring>
#include <random>
#include <stdexcept>
#include <vector>

#include "tests/test_support.h"
#include "merge/collective.h"
#include "merge/global_momentum.h"
#include "tests/merge/merge_test_support.h"

namespace xmlt::merge {
namespace {

using testing::Replicas;
using testing::ExpectSquaredNorms;
using testing::RandomReplicas;

// Weights that do not sum to 1, with a negative one whenever there are two or more.
std::vector<double> OddWeights(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> dist(0.05, 0.6);
  std::vector<double> w(n);
  for (auto& x : w) x = dist(rng);
  if (n >= 2) w[1] = -0.35;
  w[0] *= 1.1;  // as a perturbation would
  return w;
}

std::vector<size_t> SizesFor(size_t n) {
  std::vector<size_t> sizes = {0, 1, 2 * n + 1, 7 * n + 3, 100003};
  if (n > 2) sizes.push_back(n - 1);  // smaller than the replica count
  return sizes;
}

// The largest error allowed at one parameter: 1e-6 of the magnitude of the terms summed there
// (a plain relative error is meaningless where negative weights cancel the terms).
double Tolerance(double magnitude) { return 1e-6 * magnitude + 1e-30; }

void ExpectAllReplicasEqual(const Replicas& r, const std::vector<float>& expected) {
  for (size_t i = 0; i < r.data.size(); ++i)
    ASSERT_TRUE(xmlt::testing::SameBits(r.data[i].data(), expected.data(), expected.size()))
        << "replica " << i;
}

TEST(CpuPartitionedSumCollective, WeightedAllReduceIdentityMatchesSerialReference) {
  for (size_t n = 1; n <= 8; ++n) {
    for (size_t size : SizesFor(n)) {
      for (size_t partitions : {size_t{0}, size_t{3}, n + 2}) {
        SCOPED_TRACE(::testing::Message() << "n=" << n << " size=" << size << " P=" << partitions);
        Replicas r = RandomReplicas(n, size, static_cast<uint32_t>(n * 1000 + size));
        const std::vector<double> w = OddWeights(n, static_cast<uint32_t>(n));
        std::vector<double> ref(size, 0.0), mag(size, 0.0);
        for (size_t i = 0; i < n; ++i) {
          for (size_t j = 0; j < size; ++j) {
            ref[j] += w[i] * r.data[i][j];
            mag[j] += std::abs(w[i] * r.data[i][j]);
          }
        }
        std::vector<int> seen(size, 0);
        MakeCpuPartitionedSumCollective(partitions)
            ->WeightedAllReduce(r.View(), w, [&](size_t begin, size_t end, float*) {
              for (size_t j = begin; j < end; ++j) ++seen[j];  // blocks are disjoint
            });
        for (size_t j = 0; j < size; ++j) {
          ASSERT_EQ(1, seen[j]) << "parameter " << j << " finished " << seen[j] << " times";
          ASSERT_NEAR(ref[j], r.data[0][j], Tolerance(mag[j])) << "parameter " << j;
        }
        ExpectAllReplicasEqual(r, r.data[0]);
      }
    }
  }
}

TEST(CpuPartitionedSumCollective, WeightedAllReduceMomentumFinishMatchesSerialReference) {
  const double gamma = 0.9;
  for (size_t n = 1; n <= 8; ++n) {
    for (size_t size : SizesFor(n)) {
      for (size_t partitions : {size_t{0}, size_t{5}}) {
        SCOPED_TRACE(::testing::Message() << "n=" << n << " size=" << size << " P=" << partitions);
        Replicas r = RandomReplicas(n, size, static_cast<uint32_t>(7 * n + size));
        Replicas g = RandomReplicas(2, size, static_cast<uint32_t>(size + 99));
        GlobalModel global{g.data[0], g.data[1]};
        const std::vector<double> w = OddWeights(n, static_cast<uint32_t>(n + 17));
        std::vector<double> ref(size), mag(size);
        for (size_t j = 0; j < size; ++j) {
          const double step = gamma * (double(global.current()[j]) - double(global.previous()[j]));
          ref[j] = step;
          mag[j] = std::abs(gamma * global.current()[j]) + std::abs(gamma * global.previous()[j]);
          for (size_t i = 0; i < n; ++i) {
            ref[j] += w[i] * r.data[i][j];
            mag[j] += std::abs(w[i] * r.data[i][j]);
          }
        }
        const std::vector<float> old_current = global.current();
        MakeCpuPartitionedSumCollective(partitions)
            ->WeightedAllReduce(r.View(), w, GlobalMomentumFinish(&global, gamma));
        for (size_t j = 0; j < size; ++j) {
          ASSERT_NEAR(ref[j], global.current()[j], Tolerance(mag[j])) << "parameter " << j;
          ASSERT_EQ(old_current[j], global.previous()[j]) << "parameter " << j;
        }
        ExpectAllReplicasEqual(r, global.current());
      }
    }
  }
}

// With unit weights every term is exact, so the bits show the order of the sums: partition p of
// n over [size p / n, size (p + 1) / n) adds the replicas p, p + 1, ... (mod n) one after another.
TEST(CpuPartitionedSumCollective, SumsEachPartitionFromItsOwnReplica) {
  for (size_t n = 1; n <= 7; ++n) {
    for (size_t size : {n - 1, 1000 * n + n - 1}) {  // fewer parameters than partitions; uneven
      SCOPED_TRACE(::testing::Message() << "n=" << n << " size=" << size);
      Replicas r = RandomReplicas(n, size, static_cast<uint32_t>(n + size));
      for (auto& d : r.data)
        for (size_t j = 0; j < size; ++j) d[j] *= std::pow(10.0f, float(j % 7) - 3.0f);
      std::vector<float> expected(size);
      for (size_t p = 0; p < n; ++p) {
        for (size_t j = size * p / n; j < size * (p + 1) / n; ++j) {
          float sum = r.data[p][j];
          for (size_t k = 1; k < n; ++k) sum += r.data[(p + k) % n][j];
          expected[j] = sum;
        }
      }
      MakeCpuPartitionedSumCollective()->WeightedAllReduce(r.View(), std::vector<double>(n, 1.0),
                                                           nullptr);
      ExpectAllReplicasEqual(r, expected);
    }
  }
}

TEST(CpuPartitionedSumCollective, SquaredNormsMatchSerialReference) {
  for (size_t n = 1; n <= 8; ++n) {
    for (size_t size : SizesFor(n)) {
      for (size_t partitions : {size_t{0}, size_t{3}, size_t{16}}) {
        SCOPED_TRACE(::testing::Message() << "n=" << n << " size=" << size << " P=" << partitions);
        Replicas r = RandomReplicas(n, size, static_cast<uint32_t>(n + 31 * size));
        const std::vector<double> norms =
            MakeCpuPartitionedSumCollective(partitions)->SquaredNorms(r.View());
        ExpectSquaredNorms(r, norms);
      }
    }
  }
}

TEST(CpuPartitionedSumCollective, SameBitsWhateverTheThreadCountAndRun) {
  const size_t n = 5, size = 1'000'003;
  const Replicas start = RandomReplicas(n, size, 42);
  const std::vector<double> w = OddWeights(n, 43);
  auto run_in = [&](int threads) {
    Replicas r = start;
    GlobalModel global{start.data[1], start.data[2]};
    std::vector<double> norms;
    tbb::task_arena arena(threads);
    arena.execute([&] {
      auto collective = MakeCpuPartitionedSumCollective();
      norms = collective->SquaredNorms(r.View());
      collective->WeightedAllReduce(r.View(), w, GlobalMomentumFinish(&global, 0.9));
    });
    return std::make_pair(norms, r.data[n - 1]);
  };
  const auto one = run_in(1);
  for (int threads : {4, 1, 4, 2}) {
    const auto other = run_in(threads);
    ASSERT_TRUE(xmlt::testing::SameBits(one.first.data(), other.first.data(), n))
        << threads << " threads: norms differ";
    ASSERT_TRUE(xmlt::testing::SameBits(one.second.data(), other.second.data(), size))
        << threads << " threads: merged model differs";
  }
}

TEST(CpuPartitionedSumCollective, RejectsBadArguments) {
  Replicas r = RandomReplicas(3, 10, 1);
  auto collective = MakeCpuPartitionedSumCollective();
  EXPECT_THROW(collective->WeightedAllReduce(r.View(), {1.0, 2.0}, nullptr),
               std::invalid_argument);
  EXPECT_THROW(collective->WeightedAllReduce(ReplicaSet{}, {}, nullptr), std::invalid_argument);
  EXPECT_TRUE(collective->SquaredNorms(ReplicaSet{}).empty());
}

}  // namespace
}  // namespace xmlt::merge
