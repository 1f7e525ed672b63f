// NcclAllReduce across processes (NcclRanks), with threads playing the ranks
// (ranks::MakeThreadGroups, which also carries rank 0's NCCL id to the others): one communicator
// over every rank's GPUs, each rank holding the replicas of its own GPUs. For 1 to 8 GPUs in all
// (as many as there are) split over 1 to 3 ranks, 1 or 2 replicas per GPU, model sizes below the
// GPU count and not divisible by it, weights that do not sum to 1: every rank's replicas, global
// model, norms and finite check equal the host rule's, and every rank has the same bits. A GPU lost
// on one rank fails the merge on every rank, and each rank tears its communicators down without a
// hang.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "kernels/cuda/device_buffer.h"
#include "kernels/cuda/device_count.h"
#include "merge/collective.h"
#include "merge/global_momentum.h"
#include "merge/gpu/nccl_all_reduce.h"
#include "ranks/rank_group.h"
#include "tests/kernels/cuda_test_gate.h"
#include "tests/merge/gpu/gpu_replicas_support.h"
#ifdef XMLT_GPUSIM
#include "gpusim/faults.h"
#endif

namespace xmlt::merge::gpu {
namespace {

using kernels::cuda::CudaDeviceCountOrZero;
using testing::Gpus;
using testing::Layout;
using testing::RandomWeights;
using Replicas = testing::TwinReplicas;

// The rank of each GPU of `gpus`: consecutive blocks, as near equal as they come.
int RankOfGpu(int gpu, int gpus, int ranks) { return gpu * ranks / gpus; }

// How rank 0's bytes reach every rank, over a rank group.
std::function<void(uint8_t*, size_t)> FromRank0(xmlt::ranks::RankGroup& group) {
  return [&group](uint8_t* bytes, size_t size) {
    const std::vector<std::vector<uint8_t>> all =
        group.AllGather(std::vector<uint8_t>(bytes, bytes + size));
    std::memcpy(bytes, all[0].data(), size);
  };
}

// Runs `each_rank(rank, group)` on one thread per rank; rethrows the first failure.
void OnRanks(int ranks, const std::function<void(int, xmlt::ranks::RankGroup&)>& each_rank) {
  std::vector<std::unique_ptr<xmlt::ranks::RankGroup>> groups =
      xmlt::ranks::MakeThreadGroups(ranks, std::chrono::seconds(60));
  std::vector<std::exception_ptr> failures(static_cast<size_t>(ranks));
  std::vector<std::thread> threads;
  for (int r = 0; r < ranks; ++r)
    threads.emplace_back([&, r] {
      try {
        each_rank(r, *groups[size_t(r)]);
      } catch (...) {
        failures[size_t(r)] = std::current_exception();
      }
    });
  for (std::thread& t : threads) t.join();
  for (const std::exception_ptr& f : failures)
    if (f) std::rethrow_exception(f);
}

// The replicas' view for `rank`: its own replicas, the others' pointers null (never read).
std::vector<base::ReplicaParams> ViewOf(Replicas& replicas, const std::vector<int>& owners, int rank) {
  std::vector<base::ReplicaParams> view = replicas.View();
  for (size_t i = 0; i < view.size(); ++i)
    if (owners[i] != rank) view[i].params = nullptr;
  return view;
}

TEST(CudaNcclAcrossRanks, EveryRankEqualsTheHostRuleWithTheSameBits) {
  XMLT_SKIP_WITHOUT_GPU();
  uint64_t seed = 500;
  for (int gpus = 1; gpus <= Gpus(); ++gpus) {
    for (int ranks = 1; ranks <= std::min(gpus, 3); ++ranks) {
      for (const int per_gpu : {1, 2}) {
        // 3: fewer values than most GPU counts (all tail); 1003: not divisible by 2 .. 8.
        for (const size_t count : {size_t(3), size_t(1003)}) {
          ++seed;
          const bool nesterov = seed % 2 == 0;
          const std::string where = std::to_string(gpus) + " GPUs over " + std::to_string(ranks) +
                                    " ranks, " + std::to_string(per_gpu) + " replicas each, " +
                                    std::to_string(count) + " values";
          Replicas replicas(Layout(gpus, per_gpu), count, seed);
          std::vector<int> owners;
          for (const int g : replicas.gpus) owners.push_back(RankOfGpu(g, gpus, ranks));
          std::vector<std::vector<float>> host = replicas.host;
          merge::GlobalModel global;
          global.MutableCurrent() = Replicas({0}, count, seed + 1).host[0];
          global.MutablePrevious() = Replicas({0}, count, seed + 2).host[0];
          const std::vector<float> start_current = global.current(), start_previous = global.previous();
          std::vector<double> expected_norms;
          for (const std::vector<float>& h : host) {
            double sum = 0;
            for (const float v : h) sum += double(v) * v;
            expected_norms.push_back(sum);
          }
          // Two merges: a plain weighted sum, then one with the global momentum.
          const std::vector<double> w1 = RandomWeights(host.size(), seed + 3),
                                    w2 = RandomWeights(host.size(), seed + 4);
          // Each value's rounding error grows with the terms summed into it, not with the result
          // (a merge with momentum can cancel to a small value): the bounds below scale with
          // the sum of the terms' magnitudes.
          std::vector<double> magnitude(count);
          for (size_t j = 0; j < count; ++j) {
            double sum = 0;
            for (size_t i = 0; i < host.size(); ++i) {
              sum += w1[i] * host[i][j];
              magnitude[j] += std::abs(w1[i] * host[i][j]);
            }
            for (std::vector<float>& h : host) h[j] = float(sum);
            for (size_t i = 0; i < host.size(); ++i) magnitude[j] += std::abs(w2[i]) * std::abs(sum);
            magnitude[j] += std::abs(start_current[j]) + std::abs(start_previous[j]);
          }
          const auto naive = merge::MakeNaiveCollective();
          merge::ReplicaSet set;
          set.size = count;
          for (std::vector<float>& h : host) set.members.push_back({h.data()});
          merge::MergeWithGlobalMomentum(
              *naive, set, w2, 0.9, &global,
              nesterov ? merge::MomentumMode::kNesterov : merge::MomentumMode::kHeavy);
          std::vector<std::vector<float>> got_current(static_cast<size_t>(ranks)),
              got_previous(static_cast<size_t>(ranks));
          std::vector<std::vector<double>> got_norms(static_cast<size_t>(ranks));
          OnRanks(ranks, [&](int rank, xmlt::ranks::RankGroup& group) {
            NcclAllReduce nccl(ViewOf(replicas, owners, rank), count,
                               NcclRanks{rank, owners, FromRank0(group)});
            EXPECT_EQ(nccl.gpus(), size_t(gpus)) << where;
            EXPECT_EQ(nccl.shard_count(), count / size_t(gpus)) << where;
            got_norms[size_t(rank)] = nccl.SquaredNorms();
            nccl.SetGlobalModel(start_current.data(), start_previous.data());
            nccl.WeightedAllReduce(w1);
            nccl.WeightedAllReduce(w2, DeviceMomentum{0.9, nesterov});
            got_current[size_t(rank)].resize(count);
            got_previous[size_t(rank)].resize(count);
            nccl.GetGlobalModel(got_current[size_t(rank)].data(),
                                got_previous[size_t(rank)].data());
            EXPECT_TRUE(nccl.GlobalModelFinite()) << where;
          });
          for (int rank = 0; rank < ranks; ++rank) {
            SCOPED_TRACE(where + ", rank " + std::to_string(rank));
            // The same bits on every rank.
            ASSERT_EQ(got_current[size_t(rank)], got_current[0]);
            ASSERT_EQ(got_previous[size_t(rank)], got_previous[0]);
            ASSERT_EQ(got_norms[size_t(rank)], got_norms[0]);
          }
          for (size_t i = 0; i < host.size(); ++i)
            EXPECT_NEAR(got_norms[0][i], expected_norms[i], 1e-12 * expected_norms[i])
                << where << ", replica " << i;
          for (size_t j = 0; j < count; ++j) {
            const double scale = 1e-5 * (1 + magnitude[j]);
            ASSERT_NEAR(got_current[0][j], global.current()[j], scale) << where << ", w " << j;
            ASSERT_NEAR(got_previous[0][j], global.previous()[j], scale) << where << ", w_p " << j;
          }
          for (size_t i = 0; i < host.size(); ++i) {
            const std::vector<float> got = replicas.Read(i);
            for (size_t j = 0; j < count; ++j)
              ASSERT_NEAR(got[j], host[i][j], 1e-5 * (1 + magnitude[j]))
                  << where << ", replica " << i << ", value " << j;
          }
        }
      }
    }
  }
}

// A non-finite value of w in one rank's shard, and in the tail, which every rank keeps: every
// rank's check says so.
TEST(CudaNcclAcrossRanks, TheFiniteCheckSeesEveryRanksShard) {
  XMLT_SKIP_WITHOUT_GPU();
  const int gpus = Gpus();
  if (gpus < 2) GTEST_SKIP() << "needs two GPUs";
  const size_t count = size_t(gpus) * 100 + 1;
  Replicas replicas(Layout(gpus, 1), count, 9);
  std::vector<int> owners;
  for (const int g : replicas.gpus) owners.push_back(RankOfGpu(g, gpus, 2));
  for (const size_t bad : {size_t(0), count - 101, count - 1}) {
    std::vector<float> current(count, 1.0f), previous(count, 1.0f);
    current[bad] = std::numeric_limits<float>::quiet_NaN();
    std::vector<int> finite(2, -1);
    OnRanks(2, [&](int rank, xmlt::ranks::RankGroup& group) {
      NcclAllReduce nccl(ViewOf(replicas, owners, rank), count,
                         NcclRanks{rank, owners, FromRank0(group)});
      nccl.SetGlobalModel(current.data(), previous.data());
      finite[size_t(rank)] = nccl.GlobalModelFinite() ? 1 : 0;
    });
    EXPECT_EQ(finite, std::vector<int>({0, 0})) << "NaN at " << bad;
  }
}

TEST(CudaNcclAcrossRanks, RefusesOwnersThatDoNotMatchAndARankWithoutReplicas) {
  XMLT_SKIP_WITHOUT_GPU();
  Replicas replicas({0}, 10, 3);
  const auto share = [](uint8_t*, size_t) {};
  EXPECT_THROW(NcclAllReduce(replicas.View(), 10, NcclRanks{0, {0, 0}, share}),
               std::invalid_argument);
  EXPECT_THROW(NcclAllReduce(replicas.View(), 10, NcclRanks{1, {0}, share}), std::invalid_argument);
  EXPECT_THROW(NcclAllReduce(replicas.View(), 10, NcclRanks{0, {0}, nullptr}),
               std::invalid_argument);
}

#ifdef XMLT_GPUSIM
// A GPU of the last rank lost at its next launch, the merge's collective there: the merge throws
// on every rank (on the others through NCCL's async error, where a card would hang until the
// communicators are aborted), the next merge is refused, and Abort() returns on every rank.
TEST(CudaNcclAcrossRanksSim, AGpuLostOnOneRankFailsTheMergeOnEveryRank) {
  XMLT_SKIP_WITHOUT_GPU();
  const int gpus = Gpus();
  if (gpus < 2) GTEST_SKIP() << "needs two GPUs";
  const size_t count = 1003;
  std::vector<std::string> first(2), second(2);
  {
    Replicas replicas(Layout(gpus, 1), count, 5);
    std::vector<int> owners;
    for (const int g : replicas.gpus) owners.push_back(RankOfGpu(g, gpus, 2));
    const std::vector<double> w = RandomWeights(replicas.gpus.size(), 5);
    OnRanks(2, [&](int rank, xmlt::ranks::RankGroup& group) {
      NcclAllReduce nccl(ViewOf(replicas, owners, rank), count,
                         NcclRanks{rank, owners, FromRank0(group)});
      nccl.WeightedAllReduce(w);
      group.AllGather({});  // both ranks past the first merge before the fault is armed
      if (rank == 1) gpusim::InjectStickyErrorAtLaunch(1, cudaErrorIllegalAddress, gpus - 1);
      group.AllGather({});
      try {
        nccl.WeightedAllReduce(w);
      } catch (const std::runtime_error& e) {
        first[size_t(rank)] = e.what();
      }
      try {
        nccl.WeightedAllReduce(w);
      } catch (const std::runtime_error& e) {
        second[size_t(rank)] = e.what();
      }
      nccl.Abort();
    });
  }  // the replicas are freed before the GPUs are reset
  // The lost GPU's rank sees its GPU's error; the other, NCCL's.
  EXPECT_FALSE(first[1].empty());
  EXPECT_NE(first[0].find("NCCL"), std::string::npos) << first[0];
  for (int rank = 0; rank < 2; ++rank) {
    EXPECT_NE(second[size_t(rank)].find("NCCL"), std::string::npos)
        << "rank " << rank << ": " << second[size_t(rank)];
  }
  gpusim::ClearInjectedFaults();
  for (int d = 0; d < CudaDeviceCountOrZero(); ++d) {
    cudaSetDevice(d);
    cudaDeviceReset();
  }
  cudaSetDevice(0);
  cudaGetLastError();
}
#endif

}  // namespace
}  // namespace xmlt::merge::gpu
