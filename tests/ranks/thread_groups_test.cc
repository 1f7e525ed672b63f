// The in-process rank groups (threads playing ranks) that the distributed scheduler's tests run
// on, and the solo group of a run without MPI: sums of sizes the rank count does not divide, the
// same bits on every rank, gathers of unequal lengths, broadcasts, and a rank that never comes.
#include <gtest/gtest.h>

#include <cstring>
#include <functional>
#include <thread>

#include "ranks/rank_group.h"

namespace xmlt::ranks {
namespace {

// Runs body(group) on one thread per rank; rethrows the first failure.
void OnRanks(int ranks, const std::function<void(RankGroup&)>& body,
             std::chrono::milliseconds timeout = std::chrono::seconds(30)) {
  std::vector<std::unique_ptr<RankGroup>> groups = MakeThreadGroups(ranks, timeout);
  std::vector<std::thread> threads;
  std::vector<std::exception_ptr> errors(ranks);
  for (int r = 0; r < ranks; ++r)
    threads.emplace_back([&, r] {
      try {
        body(*groups[r]);
      } catch (...) {
        errors[r] = std::current_exception();
      }
    });
  for (std::thread& t : threads) t.join();
  for (const std::exception_ptr& e : errors)
    if (e) std::rethrow_exception(e);
}

template <class T>
T ValueAt(int rank, uint64_t j) {
  return T(double(j % 97) * 0.37 + rank * 1.1 + 1.0 / double(j + 1));
}

template <class T>
void CheckSums(int ranks) {
  for (uint64_t count : {0ull, 1ull, 7ull, 1000003ull}) {
    // Made once: the compiler may contract ValueAt's arithmetic differently where it is inlined.
    std::vector<std::vector<T>> inputs(ranks, std::vector<T>(count));
    for (int r = 0; r < ranks; ++r)
      for (uint64_t j = 0; j < count; ++j) inputs[r][j] = ValueAt<T>(r, j);
    std::vector<std::vector<T>> results(ranks);
    OnRanks(ranks, [&](RankGroup& group) {
      std::vector<T> values = inputs[group.rank()];
      group.SumInPlace(values.data(), count);
      results[group.rank()] = std::move(values);
    });
    for (uint64_t j = 0; j < count; ++j) {
      T reference = 0;  // in rank order, as the groups promise
      for (int r = 0; r < ranks; ++r) reference += inputs[r][j];
      ASSERT_EQ(results[0][j], reference) << count << " values on " << ranks << " ranks, element " << j;
    }
    for (int r = 1; r < ranks; ++r) EXPECT_EQ(results[r], results[0]) << "rank " << r << " differs";
  }
}

TEST(ThreadGroups, SumsInRankOrderWithTheSameBitsOnEveryRank) {
  for (int ranks : {1, 2, 3, 5}) {
    CheckSums<float>(ranks);
    CheckSums<double>(ranks);
  }
}

TEST(ThreadGroups, AllGatherKeepsRankOrderAndUnequalLengths) {
  OnRanks(3, [](RankGroup& group) {
    const std::vector<uint8_t> mine(size_t(group.rank()) * 2, uint8_t(group.rank() + 7));
    const std::vector<std::vector<uint8_t>> all = group.AllGather(mine);
    ASSERT_EQ(all.size(), 3u);
    for (int r = 0; r < 3; ++r) EXPECT_EQ(all[r], std::vector<uint8_t>(size_t(r) * 2, uint8_t(r + 7)));
  });
}

TEST(ThreadGroups, BroadcastCopiesTheRootsValues) {
  OnRanks(4, [](RankGroup& group) {
    std::vector<float> values(1001, float(group.rank()));
    group.Broadcast(values.data(), values.size(), 2);
    EXPECT_EQ(values, std::vector<float>(1001, 2.0f)) << "rank " << group.rank();
    // bf16 replicas travel as their bits; an odd count, not a whole number of floats.
    std::vector<uint16_t> bits(1001, uint16_t(0x3f80 + group.rank()));
    group.Broadcast(bits.data(), bits.size(), 1);
    EXPECT_EQ(bits, std::vector<uint16_t>(1001, uint16_t(0x3f81))) << "rank " << group.rank();
  });
}

// Only `to` receives; the others' buffers are neither read nor written (null on rank 1 here).
TEST(ThreadGroups, CopyMovesOneRanksValuesToAnotherOnly) {
  OnRanks(4, [](RankGroup& group) {
    std::vector<float> values(1001, float(group.rank()));
    group.Copy(group.rank() == 1 ? nullptr : values.data(), values.size(), 3, 0);
    const float expected = group.rank() == 0 ? 3.0f : float(group.rank());
    EXPECT_EQ(values, std::vector<float>(1001, expected)) << "rank " << group.rank();
    group.Copy(values.data(), values.size(), 2, 2);  // to itself: nothing moves
    EXPECT_EQ(values, std::vector<float>(1001, expected)) << "rank " << group.rank();
    EXPECT_THROW(group.Copy(values.data(), 1, 0, 4), std::invalid_argument);
    std::vector<uint16_t> bits(1001, uint16_t(group.rank()));
    group.Copy(group.rank() == 1 ? nullptr : bits.data(), bits.size(), 3, 0);
    EXPECT_EQ(bits, std::vector<uint16_t>(1001, uint16_t(group.rank() == 0 ? 3 : group.rank())))
        << "rank " << group.rank();
    EXPECT_THROW(group.Copy(bits.data(), 1, -1, 0), std::invalid_argument);
  });
}

TEST(ThreadGroups, ARankThatNeverComesTimesTheOthersOutNamingThem) {
  std::vector<std::string> messages(3);
  OnRanks(
      3,
      [&](RankGroup& group) {
        if (group.rank() == 2) return;  // never joins
        float x = 1;
        try {
          group.SumInPlace(&x, 1);
        } catch (const CollectiveTimeout& e) {
          messages[group.rank()] = e.what();
        }
      },
      std::chrono::milliseconds(200));
  EXPECT_NE(messages[0].find("rank 0:"), std::string::npos) << messages[0];
  EXPECT_NE(messages[0].find("waiting for rank 2"), std::string::npos) << messages[0];
  EXPECT_NE(messages[1].find("rank 1:"), std::string::npos) << messages[1];
}

TEST(SoloGroup, IsRankZeroOfOneAndLeavesValuesAsTheyAre) {
  const std::unique_ptr<RankGroup> solo = MakeSoloGroup();
  EXPECT_EQ(solo->rank(), 0);
  EXPECT_EQ(solo->size(), 1);
  std::vector<float> values{1.5f, -2};
  solo->SumInPlace(values.data(), values.size());
  EXPECT_EQ(values, (std::vector<float>{1.5f, -2}));
  EXPECT_EQ(solo->AllGather({1, 2}), (std::vector<std::vector<uint8_t>>{{1, 2}}));
  EXPECT_THROW(solo->Broadcast(values.data(), 2, 1), std::invalid_argument);
  solo->Copy(values.data(), 2, 0, 0);
  EXPECT_EQ(values, (std::vector<float>{1.5f, -2}));
  EXPECT_THROW(solo->Copy(values.data(), 2, 1, 0), std::invalid_argument);
}

}  // namespace
}  // namespace xmlt::ranks
