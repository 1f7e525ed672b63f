// The NCCL all-reduce over GPU replicas (merge/gpu/nccl_all_reduce.h) against a double-precision
// weighted sum on the CPU: every layout of 1 to 8 GPUs (as many as there are) with 1 or 3 replicas
// each, or interleaved, model sizes below the GPU count and not divisible by it, weights that do
// not sum to 1. The global momentum on the shards' owners equals the host rule, and NCCL and the
// ring agree. On the simulated GPUs the traffic is counted too (each GPU sends and receives
// 2(N-1)/N of the model, nothing through the host with peer access), and a lost GPU is torn down
// by Abort() without a hang. ctest runs these tests on 2 simulated GPUs, on 8, and on 4 without
// peer access.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/device_buffer.h"
#include "kernels/cuda/device_count.h"
#include "merge/collective.h"
#include "merge/global_momentum.h"
#include "merge/gpu/nccl_all_reduce.h"
#include "merge/gpu/ring_all_reduce.h"
#include "tests/kernels/cuda_test_gate.h"
#include "tests/merge/gpu/gpu_replicas_support.h"
#ifdef XMLT_GPUSIM
#include "gpusim/faults.h"
#include "gpusim/traffic.h"
#endif

namespace xmlt::merge::gpu {
namespace {

using kernels::cuda::CudaDeviceCountOrZero;
using testing::FewestGpus;
using testing::Gpus;
using testing::Layout;
using testing::RandomWeights;
using Replicas = testing::TwinReplicas;

TEST(CudaNcclAllReduce, EveryReplicaHoldsTheWeightedSumForEveryLayoutAndSize) {
  XMLT_SKIP_WITHOUT_GPU();
  uint64_t seed = 1;
  for (int gpus = FewestGpus(); gpus <= Gpus(); ++gpus) {
    for (const int per_gpu : {1, 3, 0}) {
      for (const size_t count : {size_t(1), size_t(7), size_t(1003)}) {
        ++seed;
        const std::string where = std::to_string(gpus) + " GPUs, " + std::to_string(per_gpu) +
                                  " replicas each (0: interleaved), " + std::to_string(count) + " values";
        Replicas replicas(Layout(gpus, per_gpu), count, seed);
        const std::vector<double> w = RandomWeights(replicas.gpus.size(), seed);
        NcclAllReduce nccl(replicas.View(), count);
        ASSERT_EQ(nccl.gpus(), size_t(gpus)) << where;
        ASSERT_EQ(nccl.shard_count(), count / size_t(gpus)) << where;
        ASSERT_EQ(nccl.tail_count(), count % size_t(gpus)) << where;
        nccl.WeightedAllReduce(w);
        std::vector<std::vector<float>> results;
        for (size_t i = 0; i < w.size(); ++i) results.push_back(replicas.Read(i));
        for (size_t j = 0; j < count; ++j) {
          double expected = 0, scale = 0;
          for (size_t i = 0; i < w.size(); ++i) {
            expected += w[i] * replicas.host[i][j];
            scale += std::abs(w[i] * replicas.host[i][j]);
          }
          for (size_t i = 0; i < w.size(); ++i) {
            ASSERT_NEAR(results[i][j], expected, 1e-6 * scale + 1e-30) << where << ": replica " << i << ", value " << j;
          }
        }
      }
    }
  }
}

// Three merges in a row (the replicas moved between them as training would move them), heavy-ball
// and Nesterov, with one replica per GPU (NCCL reads the replicas themselves: the reduce-scatter
// takes the largest multiple of the GPU count, the tail is summed apart) and two: the replicas and
// the global model w, w_p that the shards' owners keep equal the host rule
// (merge::MergeWithGlobalMomentum over the naive collective) within float rounding.
TEST(CudaNcclAllReduce, GlobalMomentumOnTheShardsOwnersEqualsTheHostRule) {
  XMLT_SKIP_WITHOUT_GPU();
  uint64_t seed = 100;
  for (int gpus = FewestGpus(); gpus <= Gpus(); ++gpus) {
    for (const int per_gpu : {1, 2}) {
      // 3: fewer values than GPUs (all tail); 1680: divisible by 1 .. 8 (no tail).
      for (const size_t count : {size_t(3), size_t(5), size_t(1003), size_t(1680)}) {
        for (const bool nesterov : {false, true}) {
          ++seed;
          const std::string where = std::to_string(gpus) + " GPUs, " + std::to_string(per_gpu) + " replicas each, " +
                                    std::to_string(count) + " values, " + (nesterov ? "Nesterov" : "heavy ball");
          Replicas replicas(Layout(gpus, per_gpu), count, seed);
          std::vector<std::vector<float>> host = replicas.host;
          merge::GlobalModel global;
          global.MutableCurrent() = Replicas({0}, count, seed + 1).host[0];
          global.MutablePrevious() = Replicas({0}, count, seed + 2).host[0];
          NcclAllReduce nccl(replicas.View(), count);
          nccl.SetGlobalModel(global.current().data(), global.previous().data());
          const auto naive = merge::MakeNaiveCollective();
          std::mt19937_64 rng(seed);
          std::normal_distribution<float> step(0.0f, 0.1f);
          for (int merge = 0; merge < 3; ++merge) {
            const std::vector<double> w = RandomWeights(host.size(), seed + 10 + merge);
            merge::ReplicaSet set;
            set.size = count;
            for (std::vector<float>& h : host) set.members.push_back({h.data()});
            merge::MergeWithGlobalMomentum(*naive, set, w, 0.9, &global,
                                           nesterov ? merge::MomentumMode::kNesterov : merge::MomentumMode::kHeavy);
            nccl.WeightedAllReduce(w, DeviceMomentum{0.9, nesterov});
            std::vector<float> current(count), previous(count);
            nccl.GetGlobalModel(current.data(), previous.data());
            for (size_t j = 0; j < count; ++j) {
              const double scale = 1e-5 * (1 + std::abs(global.current()[j]) + std::abs(global.previous()[j]));
              ASSERT_NEAR(current[j], global.current()[j], scale) << where << ", merge " << merge << ", w " << j;
              ASSERT_NEAR(previous[j], global.previous()[j], scale) << where << ", merge " << merge << ", w_p " << j;
            }
            for (size_t i = 0; i < host.size(); ++i) {
              const std::vector<float> got = replicas.Read(i);
              for (size_t j = 0; j < count; ++j)
                ASSERT_NEAR(got[j], host[i][j], 1e-5 * (1 + std::abs(host[i][j])))
                    << where << ", merge " << merge << ", replica " << i << ", value " << j;
              // Training moves each replica: the same step on both sides.
              for (float& v : host[i]) v += step(rng);
              replicas.Write(i, host[i]);
            }
          }
        }
      }
    }
  }
}

// The two device collectives are interchangeable: the same merges (averages, with and without
// momentum) from the same replicas give the same replicas and global model, up to the order of
// float additions.
TEST(CudaNcclAllReduce, AgreesWithTheRing) {
  XMLT_SKIP_WITHOUT_GPU();
  const size_t count = 1003;
  for (const int per_gpu : {1, 3, 0}) {
    const std::vector<int> layout = Layout(Gpus(), per_gpu);
    Replicas for_ring(layout, count, 21), for_nccl(layout, count, 21);
    const std::vector<float> current = Replicas({0}, count, 22).host[0], previous = Replicas({0}, count, 23).host[0];
    RingAllReduce ring(for_ring.View(), count);
    NcclAllReduce nccl(for_nccl.View(), count);
    ring.SetGlobalModel(current.data(), previous.data());
    nccl.SetGlobalModel(current.data(), previous.data());
    for (int merge = 0; merge < 4; ++merge) {
      // Averages, so that the values stay near 1 over the merges and float rounding stays small.
      std::vector<double> w = RandomWeights(layout.size(), 30 + merge);
      double total = 0;
      for (const double x : w) total += x;
      for (double& x : w) x /= total;
      if (merge % 2 == 0) {
        ring.WeightedAllReduce(w);
        nccl.WeightedAllReduce(w);
      } else {
        ring.WeightedAllReduce(w, DeviceMomentum{0.8, merge == 3});
        nccl.WeightedAllReduce(w, DeviceMomentum{0.8, merge == 3});
      }
      for (size_t i = 0; i < layout.size(); ++i) {
        const std::vector<float> a = for_ring.Read(i), b = for_nccl.Read(i);
        for (size_t j = 0; j < count; ++j)
          ASSERT_NEAR(a[j], b[j], 1e-5 * (1 + std::abs(a[j])))
              << per_gpu << " replicas each (0: interleaved), merge " << merge << ", replica " << i << ", value " << j;
      }
    }
    std::vector<float> ring_w(count), ring_wp(count), nccl_w(count), nccl_wp(count);
    ring.GetGlobalModel(ring_w.data(), ring_wp.data());
    nccl.GetGlobalModel(nccl_w.data(), nccl_wp.data());
    for (size_t j = 0; j < count; ++j) {
      ASSERT_NEAR(ring_w[j], nccl_w[j], 1e-5 * (1 + std::abs(ring_w[j]))) << "w " << j;
      ASSERT_NEAR(ring_wp[j], nccl_wp[j], 1e-5 * (1 + std::abs(ring_wp[j]))) << "w_p " << j;
    }
  }
}

TEST(CudaNcclAllReduce, SquaredNormsAndTheFiniteCheckOfTheGlobalModel) {
  XMLT_SKIP_WITHOUT_GPU();
  const size_t count = 5003;
  Replicas replicas(Layout(Gpus(), 2), count, 7);
  NcclAllReduce nccl(replicas.View(), count);
  const std::vector<double> norms = nccl.SquaredNorms();
  ASSERT_EQ(norms.size(), replicas.gpus.size());
  for (size_t i = 0; i < norms.size(); ++i) {
    double expected = 0;
    for (const float v : replicas.host[i]) expected += double(v) * v;
    EXPECT_NEAR(norms[i], expected, 1e-12 * expected) << "replica " << i;
  }
  std::vector<float> current(count, 1.0f), previous(count, 2.0f);
  nccl.SetGlobalModel(current.data(), previous.data());
  EXPECT_TRUE(nccl.GlobalModelFinite());
  current[count - 1] = std::numeric_limits<float>::infinity();  // in the last shard
  nccl.SetGlobalModel(current.data(), previous.data());
  EXPECT_FALSE(nccl.GlobalModelFinite());
  current[count - 1] = 1.0f;
  current[0] = std::numeric_limits<float>::quiet_NaN();  // in the first
  nccl.SetGlobalModel(current.data(), previous.data());
  EXPECT_FALSE(nccl.GlobalModelFinite());
}

TEST(CudaNcclAllReduce, RefusesAWrongWeightCountNoReplicasAndMomentumWithoutAGlobalModel) {
  XMLT_SKIP_WITHOUT_GPU();
  Replicas replicas({0, 0}, 10, 3);
  NcclAllReduce nccl(replicas.View(), 10);
  EXPECT_THROW(nccl.WeightedAllReduce({1.0}), std::invalid_argument);
  EXPECT_THROW(NcclAllReduce({}, 10), std::invalid_argument);
  EXPECT_THROW(NcclAllReduce({{nullptr, 0}}, 10), std::invalid_argument);
  EXPECT_THROW(nccl.WeightedAllReduce({1.0, 1.0}, DeviceMomentum{0.9, false}), std::logic_error);
  EXPECT_THROW(nccl.GlobalModelFinite(), std::logic_error);
  nccl.WeightedAllReduce({0.5, 0.25});  // still usable after the refusals
  EXPECT_NEAR(replicas.Read(1)[3], 0.5 * replicas.host[0][3] + 0.25 * replicas.host[1][3], 1e-6);
}

#ifdef XMLT_GPUSIM
// NCCL's ring moves 2(N-1)/N of the model per GPU in an all-reduce (up to a value per chunk where
// the model does not divide evenly), and with momentum a reduce-scatter and an all-gather of the
// largest multiple of N, plus the tail's all-reduce: 2(N-1)/N of the model up to 2N values.
// Replicas of one GPU move nothing, and with peer access no byte goes through host memory.
TEST(CudaNcclAllReduceSim, EachGpuMovesTwoNMinusOneOverNOfTheModelAndNothingTouchesTheHost) {
  XMLT_SKIP_WITHOUT_GPU();
  const int gpus = Gpus();
  const size_t count = 10007;
  for (const int per_gpu : {1, 2}) {
    for (const bool momentum : {false, true}) {
      Replicas replicas(Layout(gpus, per_gpu), count, 11);
      NcclAllReduce nccl(replicas.View(), count);
      const std::vector<float> zeros(count, 0.0f);
      nccl.SetGlobalModel(zeros.data(), zeros.data());
      gpusim::ResetTraffic();
      const std::vector<double> w = RandomWeights(replicas.gpus.size(), 11);
      if (momentum) {
        nccl.WeightedAllReduce(w, DeviceMomentum{0.9, false});
      } else {
        nccl.WeightedAllReduce(w);
      }
      const double model = double(count) * sizeof(float);
      const double expected = 2.0 * (gpus - 1) / gpus * model;
      const double slack = (momentum ? 2.0 * gpus : 2.0) * sizeof(float);
      for (int g = 0; g < gpus; ++g) {
        const gpusim::Traffic t = gpusim::TrafficOf(g);
        SCOPED_TRACE("GPU " + std::to_string(g) + " of " + std::to_string(gpus) + ", " + std::to_string(per_gpu) +
                     " replicas each, " + (momentum ? "momentum" : "no momentum"));
        EXPECT_NEAR(double(t.peer_sent), expected, slack);
        EXPECT_NEAR(double(t.peer_received), expected, slack);
        if (gpusim::PeerAccessAllowed()) {
          EXPECT_EQ(t.to_host, 0u);
          EXPECT_EQ(t.from_host, 0u);
        } else {  // NCCL's transport through host memory: each byte sent goes down and up again
          EXPECT_EQ(t.to_host, t.peer_sent);
          EXPECT_EQ(t.from_host, t.peer_received);
        }
      }
    }
  }
}

// The global momentum with one replica per GPU and a model not divisible by the GPU count: the
// replica itself goes into the reduce-scatter (its tail into the all-reduce), so a GPU holds no
// model-sized buffer beyond its replica: only its shard and the tail of w and w_p, and the
// norms' scratch.
TEST(CudaNcclAllReduceSim, MomentumWithOneReplicaPerGpuTakesOnlyItsShardsOfTheGlobalModel) {
  XMLT_SKIP_WITHOUT_GPU();
  const int gpus = Gpus();
  const size_t count = size_t(100003) * size_t(gpus) + size_t(gpus - 1);  // a tail wherever gpus > 1
  Replicas replicas(Layout(gpus, 1), count, 13);
  const std::vector<float> current = Replicas({0}, count, 14).host[0], previous = Replicas({0}, count, 15).host[0];
  std::vector<size_t> free_before(static_cast<size_t>(gpus), 0);
  for (int g = 0; g < gpus; ++g) {
    size_t total = 0;
    XMLT_CUDA_CHECK(cudaSetDevice(g));
    XMLT_CUDA_CHECK(cudaMemGetInfo(&free_before[size_t(g)], &total));
  }
  NcclAllReduce nccl(replicas.View(), count);
  nccl.SetGlobalModel(current.data(), previous.data());
  nccl.WeightedAllReduce(RandomWeights(size_t(gpus), 13), DeviceMomentum{0.9, false});
  const size_t owned = 2 * (nccl.shard_count() + nccl.tail_count()) * sizeof(float);
  for (int g = 0; g < gpus; ++g) {
    size_t free_after = 0, total = 0;
    XMLT_CUDA_CHECK(cudaSetDevice(g));
    XMLT_CUDA_CHECK(cudaMemGetInfo(&free_after, &total));
    const size_t taken = free_before[size_t(g)] - free_after;
    EXPECT_GE(taken, owned) << "GPU " << g;
    EXPECT_LT(taken, owned + (size_t(1) << 20)) << "GPU " << g << " of " << gpus << ": " << taken
                                             << " bytes for a shard of " << owned << " (a model is "
                                             << count * sizeof(float) << ")";
  }
  XMLT_CUDA_CHECK(cudaSetDevice(0));
}

void ResetGpus() {
  gpusim::ClearInjectedFaults();
  for (int d = 0; d < CudaDeviceCountOrZero(); ++d) {
    cudaSetDevice(d);
    cudaDeviceReset();
  }
  cudaSetDevice(0);
  cudaGetLastError();
}

// A GPU lost in a merge: the merge throws, the next one is refused by NCCL (its collective cannot
// run with a lost rank), and Abort() tears the communicators down at once where a destroy would
// wait for the lost rank. Without Abort() the destructor aborts too, since a merge failed.
TEST(CudaNcclAllReduceSim, ALostGpuIsTornDownByAbortWithoutAHang) {
  XMLT_SKIP_WITHOUT_GPU();
  const int gpus = Gpus();
  if (gpus < 2) GTEST_SKIP() << "needs two GPUs";
  for (const bool abort : {true, false}) {
    {
      const size_t count = 1003;
      Replicas replicas(Layout(gpus, 1), count, 5);
      const std::vector<double> w = RandomWeights(replicas.gpus.size(), 5);
      NcclAllReduce nccl(replicas.View(), count);
      nccl.WeightedAllReduce(w);
      // The next launch on the last GPU, which is this merge's collective there.
      gpusim::InjectStickyErrorAtLaunch(1, cudaErrorIllegalAddress, gpus - 1);
      EXPECT_THROW(nccl.WeightedAllReduce(w), std::runtime_error);
      try {
        nccl.WeightedAllReduce(w);
        ADD_FAILURE() << "a merge with a lost GPU went through";
      } catch (const std::runtime_error& e) {
        EXPECT_NE(std::string(e.what()).find("NCCL"), std::string::npos) << e.what();
      }
      if (abort) {
        nccl.Abort();
        EXPECT_THROW(nccl.WeightedAllReduce(w), std::logic_error);
      }
    }  // the destructor returns: no collective is waited for
    ResetGpus();
  }
}
#endif

}  // namespace
}  // namespace xmlt::merge::gpu
