// The collectives by their MakeCollective names ("ring" is the partitioned sum) against one
// serial double-precision reference: replica counts 1..8, sizes 0, 1, below and not divisible by
// the count, and large; weights that do not sum to 1 and negative ones; bits independent of runs
// and thread counts; the names MakeCollective accepts.
#include <gtest/gtest.h>
#include <tbb/task_arena.h>

#include <cmath>
#include <cstring>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "tests/test_support.h"
#include "merge/collective.h"
#include "tests/merge/merge_test_support.h"

namespace xmlt::merge {
namespace {

using testing::Replicas;
using testing::ExpectSquaredNorms;
using testing::RandomReplicas;

const char* const kNames[] = {"ring", "tree", "naive"};

// Weights that do not sum to 1, with a negative one whenever there are two or more.
std::vector<double> OddWeights(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> dist(0.05, 0.9);
  std::vector<double> w(n);
  for (auto& x : w) x = dist(rng);
  if (n >= 2) w[n / 2] = -0.45;
  return w;
}

std::vector<size_t> SizesFor(size_t n) {
  std::vector<size_t> sizes = {0, 1, 7 * n + 3, 100003};
  if (n > 2) sizes.push_back(n - 1);  // smaller than the replica count
  return sizes;
}

// A finish step that is exact and visible: v -> -v; counts that each parameter is finished once.
struct CountingFinish {
  std::vector<int> seen;
  FinishBlock Get() {
    return [this](size_t begin, size_t end, float* values) {
      for (size_t j = begin; j < end; ++j) {
        ++seen[j];
        values[j - begin] = -values[j - begin];
      }
    };
  }
};

TEST(Collectives, WeightedAllReduceMatchesDoubleReference) {
  for (const char* name : kNames) {
    for (size_t n = 1; n <= 8; ++n) {
      for (size_t size : SizesFor(n)) {
        for (size_t partitions : {size_t{0}, size_t{3}}) {
          SCOPED_TRACE(::testing::Message()
                       << name << " n=" << n << " size=" << size << " P=" << partitions);
          Replicas r = RandomReplicas(n, size, static_cast<uint32_t>(97 * n + size));
          const std::vector<double> w = OddWeights(n, static_cast<uint32_t>(n + 5));
          std::vector<double> ref(size, 0.0), mag(size, 0.0);
          for (size_t i = 0; i < n; ++i) {
            for (size_t j = 0; j < size; ++j) {
              ref[j] += w[i] * r.data[i][j];
              mag[j] += std::abs(w[i] * r.data[i][j]);
            }
          }
          CountingFinish finish{std::vector<int>(size, 0)};
          MakeCollective(name, partitions)->WeightedAllReduce(r.View(), w, finish.Get());
          for (size_t j = 0; j < size; ++j) {
            ASSERT_EQ(1, finish.seen[j]) << "parameter " << j;
            // 1e-6 relative to sum |w_i r_i| (negative weights may cancel the sum itself).
            ASSERT_NEAR(-ref[j], r.data[0][j], 1e-6 * mag[j] + 1e-30) << "parameter " << j;
          }
          for (size_t i = 1; i < n; ++i)
            ASSERT_TRUE(xmlt::testing::SameBits(r.data[0].data(), r.data[i].data(), size))
                << "replica " << i;
        }
      }
    }
  }
}

TEST(Collectives, SquaredNormsMatchDoubleReference) {
  for (const char* name : kNames) {
    for (size_t n = 1; n <= 8; ++n) {
      for (size_t size : SizesFor(n)) {
        SCOPED_TRACE(::testing::Message() << name << " n=" << n << " size=" << size);
        Replicas r = RandomReplicas(n, size, static_cast<uint32_t>(n + 13 * size));
        const std::vector<double> norms = MakeCollective(name, n)->SquaredNorms(r.View());
        ExpectSquaredNorms(r, norms);
      }
    }
  }
}

// With unit weights the leaves are exact, so the bits show the documented order of the sums.
TEST(Collectives, TreeSumsAdjacentPairsFoldingTheExcessFirst) {
  for (size_t n = 1; n <= 8; ++n) {
    SCOPED_TRACE(::testing::Message() << "n=" << n);
    const size_t size = 1000;
    Replicas r = RandomReplicas(n, size, static_cast<uint32_t>(n));
    for (auto& d : r.data)
      for (size_t j = 0; j < size; ++j) d[j] *= std::pow(10.0f, float(j % 7) - 3.0f);
    std::vector<float> expected(size);
    for (size_t j = 0; j < size; ++j) {
      auto x = [&](size_t i) { return r.data[i][j]; };
      switch (n) {
        case 1:
          expected[j] = x(0);
          break;
        case 2:
          expected[j] = x(0) + x(1);
          break;
        case 3:
          expected[j] = (x(0) + x(1)) + x(2);
          break;
        case 4:
          expected[j] = (x(0) + x(1)) + (x(2) + x(3));
          break;
        case 5:
          expected[j] = ((x(0) + x(1)) + x(2)) + (x(3) + x(4));
          break;
        case 6:
          expected[j] = ((x(0) + x(1)) + (x(2) + x(3))) + (x(4) + x(5));
          break;
        case 7:
          expected[j] = ((x(0) + x(1)) + (x(2) + x(3))) + ((x(4) + x(5)) + x(6));
          break;
        case 8:
          expected[j] = ((x(0) + x(1)) + (x(2) + x(3))) + ((x(4) + x(5)) + (x(6) + x(7)));
          break;
      }
    }
    MakeCpuTreeCollective()->WeightedAllReduce(r.View(), std::vector<double>(n, 1.0), nullptr);
    for (size_t i = 0; i < n; ++i)
      ASSERT_TRUE(xmlt::testing::SameBits(expected.data(), r.data[i].data(), size))
          << "replica " << i;
  }
}

TEST(Collectives, SameBitsWhateverTheThreadCountAndRun) {
  const size_t n = 5, size = 1'000'003;
  const Replicas start = RandomReplicas(n, size, 7);
  const std::vector<double> w = OddWeights(n, 8);
  for (const char* name : kNames) {
    SCOPED_TRACE(name);
    auto run_in = [&](int threads) {
      Replicas r = start;
      std::vector<double> norms;
      tbb::task_arena arena(threads);
      arena.execute([&] {
        auto collective = MakeCollective(name, n);
        norms = collective->SquaredNorms(r.View());
        collective->WeightedAllReduce(r.View(), w, nullptr);
      });
      return std::make_pair(norms, r.data[n - 1]);
    };
    const auto one = run_in(1);
    for (int threads : {4, 1, 2}) {
      const auto other = run_in(threads);
      ASSERT_TRUE(xmlt::testing::SameBits(one.first.data(), other.first.data(), n))
          << threads << " threads: norms differ";
      ASSERT_TRUE(xmlt::testing::SameBits(one.second.data(), other.second.data(), size))
          << threads << " threads: reduced model differs";
    }
  }
}

TEST(Collectives, MakeCollectiveByName) {
  for (const char* name : kNames) EXPECT_NE(nullptr, MakeCollective(name, 4)) << name;
  for (const char* bad : {"", "Ring", "nccl", "tree "})
    EXPECT_THROW(MakeCollective(bad, 4), std::invalid_argument) << "'" << bad << "'";
}

TEST(Collectives, RejectBadArguments) {
  for (const char* name : kNames) {
    SCOPED_TRACE(name);
    auto collective = MakeCollective(name, 3);
    Replicas r = RandomReplicas(3, 10, 1);
    EXPECT_THROW(collective->WeightedAllReduce(r.View(), {1.0, 2.0}, nullptr),
                 std::invalid_argument);
    EXPECT_THROW(collective->WeightedAllReduce(ReplicaSet{}, {}, nullptr), std::invalid_argument);
    ReplicaSet null_params = r.View();
    null_params.members[1].params = nullptr;
    EXPECT_THROW(collective->WeightedAllReduce(null_params, {1, 1, 1}, nullptr),
                 std::invalid_argument);
    EXPECT_THROW(collective->SquaredNorms(null_params), std::invalid_argument);
    EXPECT_TRUE(collective->SquaredNorms(ReplicaSet{}).empty());
  }
}

}  // namespace
}  // namespace xmlt::merge
