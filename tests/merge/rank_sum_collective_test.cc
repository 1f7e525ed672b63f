// The hierarchical collective across ranks (threads playing the ranks): every rank's own replicas
// end with the weighted sum over all ranks' replicas, finished once per parameter on every rank,
// the same bits on every rank; the replicas of other ranks' devices are never read (they hold NaN
// here) nor written. Replica counts, sizes and owners that divide nothing evenly, and a rank that
// owns no replica. Replicas that keep bf16 weights get the rank sum of their widened values,
// rounded to nearest, past several of its fp32 chunks.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <exception>
#include <limits>
#include <stdexcept>
#include <thread>
#include <vector>

#include "merge/collective.h"
#include "merge/rank_sum_collective.h"
#include "ranks/rank_group.h"
#include "tests/merge/bf16_replica_support.h"
#include "tests/merge/merge_test_support.h"
#include "tests/test_support.h"

namespace xmlt::merge {
namespace {

using testing::Replicas;
using testing::RandomReplicas;

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

// Runs body(rank, group) on `ranks` threads and rethrows the first failure.
template <class Body>
void OnRanks(int ranks, Body body) {
  std::vector<std::unique_ptr<xmlt::ranks::RankGroup>> groups = xmlt::ranks::MakeThreadGroups(ranks);
  std::vector<std::exception_ptr> errors(ranks);
  std::vector<std::thread> threads;
  for (int r = 0; r < ranks; ++r)
    threads.emplace_back([&, r] {
      try {
        body(r, *groups[r]);
      } catch (...) {
        errors[r] = std::current_exception();
      }
    });
  for (std::thread& t : threads) t.join();
  for (const std::exception_ptr& e : errors)
    if (e) std::rethrow_exception(e);
}

struct Case {
  int ranks;
  std::vector<int> owner;  // the rank of each replica
};

// Rank r's view of the replicas: its own as drawn, the others' NaN.
Replicas ViewOfRank(const Replicas& all, const Case& c, int rank) {
  Replicas mine = all;
  for (size_t i = 0; i < c.owner.size(); ++i)
    if (c.owner[i] != rank) mine.data[i].assign(mine.data[i].size(), kNaN);
  return mine;
}

std::vector<bool> IsLocal(const Case& c, int rank) {
  std::vector<bool> local;
  for (int o : c.owner) local.push_back(o == rank);
  return local;
}

const Case kCases[] = {{2, {0, 0, 1, 1}}, {3, {0, 2, 2, 0, 2, 2, 2}}, {3, {1, 0, 2}}, {2, {1, 1, 1}}};

TEST(RankSumCollective, SumsEveryRanksReplicasWithoutReadingOrWritingTheOthers) {
  for (const Case& c : kCases) {
    const size_t n = c.owner.size();
    for (size_t size : {size_t{0}, size_t{1}, size_t{5}, 7 * n + 3, size_t{100003}}) {
      SCOPED_TRACE(::testing::Message() << c.ranks << " ranks, " << n << " replicas, size " << size);
      const Replicas all = RandomReplicas(n, size, uint32_t(31 * n + size));
      std::vector<double> w(n);
      for (size_t i = 0; i < n; ++i) w[i] = 0.1 + 0.17 * double(i);
      w[n / 2] = -0.4;  // weights need not sum to 1 nor be positive
      std::vector<double> ref(size, 0.0), magnitude(size, 0.0);
      for (size_t i = 0; i < n; ++i)
        for (size_t j = 0; j < size; ++j) {
          ref[j] += w[i] * all.data[i][j];
          magnitude[j] += std::abs(w[i] * all.data[i][j]);
        }
      std::vector<Replicas> after(c.ranks);
      std::vector<std::vector<int>> finished(c.ranks, std::vector<int>(size, 0));
      OnRanks(c.ranks, [&](int rank, xmlt::ranks::RankGroup& group) {
        Replicas mine = ViewOfRank(all, c, rank);
        std::vector<int>& seen = finished[rank];
        FinishBlock negate = [&seen](size_t begin, size_t end, float* values) {
          for (size_t j = begin; j < end; ++j) ++seen[j], values[j - begin] = -values[j - begin];
        };
        MakeRankSumCollective(MakeCollective("ring", n), group, IsLocal(c, rank))
            ->WeightedAllReduce(mine.View(), w, negate);
        after[rank] = mine;
      });
      for (int rank = 0; rank < c.ranks; ++rank) {
        for (size_t j = 0; j < size; ++j) ASSERT_EQ(1, finished[rank][j]) << "rank " << rank << ", parameter " << j;
        for (size_t i = 0; i < n; ++i) {
          const std::vector<float>& got = after[rank].data[i];
          if (c.owner[i] != rank) {
            for (float x : got) ASSERT_TRUE(std::isnan(x)) << "rank " << rank << " wrote replica " << i;
            continue;
          }
          for (size_t j = 0; j < size; ++j)
            ASSERT_NEAR(-ref[j], got[j], 1e-6 * magnitude[j] + 1e-30) << "rank " << rank << ", replica " << i;
          // The same bits on every rank, whichever replica holds them.
          const int first_owner = c.owner[0];
          ASSERT_TRUE(xmlt::testing::SameBits(after[first_owner].data[0].data(), got.data(), size))
              << "rank " << rank << ", replica " << i;
        }
      }
    }
  }
}

TEST(RankSumCollective, SquaredNormsAreEachOwnersBits) {
  for (const Case& c : kCases) {
    const size_t n = c.owner.size();
    const Replicas all = RandomReplicas(n, 10007, uint32_t(n));
    Replicas copy = all;
    const std::vector<double> expected = MakeCollective("ring", n)->SquaredNorms(copy.View());
    OnRanks(c.ranks, [&](int rank, xmlt::ranks::RankGroup& group) {
      Replicas mine = ViewOfRank(all, c, rank);
      const std::vector<double> norms =
          MakeRankSumCollective(MakeCollective("ring", n), group, IsLocal(c, rank))->SquaredNorms(mine.View());
      ASSERT_EQ(norms, expected) << "rank " << rank;
    });
  }
}

// The other ranks' replicas need not exist here: null pointers are neither read nor written, and
// the sum is the same bits as with them present. A null replica of this rank's own is refused.
TEST(RankSumCollective, TheOtherRanksReplicasMayBeNull) {
  const Case c{2, {0, 1, 1, 0, 1}};
  const Replicas all = RandomReplicas(c.owner.size(), 1003, 7);
  const std::vector<double> weights{0.1, 0.3, 0.2, 0.25, 0.4};
  OnRanks(c.ranks, [&](int rank, xmlt::ranks::RankGroup& group) {
    Replicas present = ViewOfRank(all, c, rank), absent = present;
    ReplicaSet with_nulls = absent.View();
    for (size_t i = 0; i < c.owner.size(); ++i)
      if (c.owner[i] != rank) with_nulls.members[i].params = nullptr;
    MakeRankSumCollective(MakeCollective("ring", c.owner.size()), group, IsLocal(c, rank))
        ->WeightedAllReduce(present.View(), weights, nullptr);
    MakeRankSumCollective(MakeCollective("ring", c.owner.size()), group, IsLocal(c, rank))
        ->WeightedAllReduce(with_nulls, weights, nullptr);
    for (size_t i = 0; i < c.owner.size(); ++i) {
      if (c.owner[i] != rank) continue;
      ASSERT_TRUE(xmlt::testing::SameBits(present.data[i].data(), absent.data[i].data(), present.data[i].size()))
          << "rank " << rank << ", replica " << i;
    }
    ReplicaSet own_null = present.View();
    own_null.members[rank == 0 ? 0 : 1].params = nullptr;
    EXPECT_THROW(MakeRankSumCollective(MakeCollective("ring", c.owner.size()), group, IsLocal(c, rank))
                     ->WeightedAllReduce(own_null, weights, nullptr),
                 std::invalid_argument);
  });
}

// bf16 replicas: every rank's global model and own replicas are, bit for bit, what the rank sum
// of fp32 replicas holding the widened values gives, with the finish moved to the rounded start
// (bf16_replica_support.h), the replicas then rounded to nearest. The naive local sum adds in the
// same order whatever the chunks; the partitioned one's order follows its partitions, which the
// chunks move, so it is held to the same bits on every rank and to the fp32 sum's rounding. The
// other ranks' members are null, as the run leaves them; a rank with no replica of its own knows
// from the set that the run's weights are bf16.
TEST(RankSumCollective, Bf16ReplicasGetTheFp32RankSumOfTheirWidenedValuesRoundedToNearest) {
  for (const Case& c : kCases) {
    const size_t n = c.owner.size();
    std::vector<size_t> sizes = {size_t{0}, size_t{1}, 7 * n + 3, size_t{100003}};
    if (&c == &kCases[0]) sizes.push_back(kRankSumBf16Chunk * 2 + 4099);  // three chunks, the last short
    for (size_t size : sizes)
      for (const char* local : {"naive", "ring"})
        for (const MomentumMode mode : {MomentumMode::kHeavy, MomentumMode::kNesterov}) {
          if (size > 100003 && (std::string(local) != "naive" || mode != MomentumMode::kHeavy)) continue;
          SCOPED_TRACE(::testing::Message() << c.ranks << " ranks, " << n << " replicas, size " << size << ", "
                                            << local << (mode == MomentumMode::kHeavy ? ", heavy" : ", nesterov"));
          const testing::Bf16Replicas all = testing::RandomBf16Replicas(n, size, uint32_t(17 * n + size));
          std::vector<double> w(n);
          for (size_t i = 0; i < n; ++i) w[i] = 0.1 + 0.17 * double(i);
          double weight_sum = 0;
          for (double a : w) weight_sum += a;
          const Replicas start = RandomReplicas(2, size, uint32_t(size + 5));
          std::vector<GlobalModel> fp32_global(c.ranks, GlobalModel(start.data[0], start.data[1]));
          std::vector<GlobalModel> bf16_global = fp32_global;
          std::vector<Replicas> fp32_after(c.ranks);
          std::vector<testing::Bf16Replicas> bf16_after(c.ranks);
          OnRanks(c.ranks, [&](int rank, xmlt::ranks::RankGroup& group) {
            Replicas fp32 = ViewOfRank(all.Widened(), c, rank);
            MakeRankSumCollective(MakeCollective(local, n), group, IsLocal(c, rank))
                ->WeightedAllReduce(fp32.View(), w,
                                    testing::MovedFinish(&fp32_global[rank], 0.5, mode, weight_sum));
            testing::Bf16Replicas bf16 = all;
            ReplicaSet view = bf16.View();
            view.weights_in_bf16 = true;
            for (size_t i = 0; i < n; ++i)
              if (c.owner[i] != rank) view.members[i] = {};
            MakeRankSumCollective(MakeCollective(local, n), group, IsLocal(c, rank))
                ->WeightedAllReduceWithMomentum(view, w, 0.5, mode, &bf16_global[rank]);
            fp32_after[rank] = std::move(fp32);
            bf16_after[rank] = std::move(bf16);
          });
          for (int rank = 0; rank < c.ranks; ++rank) {
            ASSERT_TRUE(xmlt::testing::SameBits(bf16_global[0].current().data(), bf16_global[rank].current().data(),
                                                size))
                << "rank " << rank << " drifted from rank 0";
            const bool exact = std::string(local) == "naive";
            for (size_t j = 0; j < size && exact; ++j)
              ASSERT_EQ(fp32_global[rank].current()[j], bf16_global[rank].current()[j]) << "rank " << rank << ", w " << j;
            for (size_t j = 0; j < size && !exact; ++j)
              ASSERT_NEAR(fp32_global[rank].current()[j], bf16_global[rank].current()[j],
                          1e-5 * (1 + std::abs(fp32_global[rank].current()[j])))
                  << "rank " << rank << ", w " << j;
            for (size_t i = 0; i < n; ++i) {
              if (c.owner[i] != rank) {
                ASSERT_EQ(bf16_after[rank].data[i], all.data[i]) << "rank " << rank << " wrote replica " << i;
                continue;
              }
              // Each own replica holds the next start rounded to nearest: w itself under kHeavy.
              for (size_t j = 0; j < size && exact; ++j)
                ASSERT_EQ(kernels::cpu::NearestBf16(fp32_after[rank].data[i][j]), bf16_after[rank].data[i][j])
                    << "rank " << rank << ", replica " << i << ", parameter " << j;
              ASSERT_EQ(bf16_after[rank].data[i], bf16_after[c.owner[i]].data[i]);
              const int first_owner = c.owner[0];
              ASSERT_EQ(bf16_after[rank].data[i], bf16_after[first_owner].data[0]) << "rank " << rank;
            }
          }
        }
  }
}

TEST(RankSumCollective, RefusesAReplicaCountOtherThanItsDevices) {
  OnRanks(1, [](int, xmlt::ranks::RankGroup& group) {
    Replicas r = RandomReplicas(3, 10, 1);
    auto collective = MakeRankSumCollective(MakeCollective("ring", 2), group, {true, true});
    EXPECT_THROW(collective->WeightedAllReduce(r.View(), {0.3, 0.3, 0.4}, nullptr), std::invalid_argument);
    EXPECT_THROW(collective->SquaredNorms(r.View()), std::invalid_argument);
    EXPECT_THROW(MakeRankSumCollective(nullptr, group, {true}), std::invalid_argument);
  });
}

}  // namespace
}  // namespace xmlt::merge
