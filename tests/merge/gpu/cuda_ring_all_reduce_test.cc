// The ring all-reduce over GPU replicas (merge/gpu/ring_all_reduce.h) against a double-precision
// weighted sum on the CPU: every layout of 1 to 8 GPUs (as many as there are) with 1 or 3 replicas
// each, or interleaved, model sizes below the GPU count and not divisible by it, weights that do
// not sum to 1, one or several partitions. On the simulated GPUs the traffic is counted too: each
// GPU sends and receives 2(N-1)/N of the model, and with peer access nothing goes through the
// host. The global momentum on the chunks' owners equals the host rule. ctest runs these tests on 2
// simulated GPUs, on 8, and on 4 without peer access.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/device_buffer.h"
#include "kernels/cuda/device_count.h"
#include "merge/collective.h"
#include "merge/global_momentum.h"
#include "merge/gpu/ring_all_reduce.h"
#include "tests/kernels/cuda_test_gate.h"
#include "tests/merge/gpu/gpu_replicas_support.h"
#ifdef XMLT_GPUSIM
#include "gpusim/traffic.h"
#endif

namespace xmlt::merge::gpu {
namespace {

using kernels::cuda::DeviceGuard;
using testing::FewestGpus;
using testing::Gpus;
using testing::Layout;
using testing::RandomWeights;
using Replicas = testing::TwinReplicas;

TEST(CudaRingAllReduce, EveryReplicaHoldsTheWeightedSumForEveryLayoutSizeAndPartitioning) {
  XMLT_SKIP_WITHOUT_GPU();
  uint64_t seed = 1;
  for (int gpus = FewestGpus(); gpus <= Gpus(); ++gpus) {
    for (const int per_gpu : {1, 3, 0}) {
      for (const size_t count : {size_t(1), size_t(7), size_t(1003)}) {
        for (const size_t partitions : {size_t(0), size_t(3)}) {
          ++seed;
          const std::string where = std::to_string(gpus) + " GPUs, " + std::to_string(per_gpu) +
                                    " replicas each (0: interleaved), " + std::to_string(count) + " values, " +
                                    std::to_string(partitions) + " partitions";
          Replicas replicas(Layout(gpus, per_gpu), count, seed);
          const std::vector<double> w = RandomWeights(replicas.gpus.size(), seed);
          RingAllReduce ring(replicas.View(), count, partitions);
          ASSERT_EQ(ring.gpus(), size_t(gpus)) << where;
          ring.WeightedAllReduce(w);
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
}

// Three merges in a row (the replicas moved between them as training would move them), heavy-ball
// and Nesterov: the replicas and the global model w, w_p that the chunks' owners keep equal the
// host rule (merge::MergeWithGlobalMomentum over the naive collective) within float rounding.
TEST(CudaRingAllReduce, GlobalMomentumOnTheChunksOwnersEqualsTheHostRule) {
  XMLT_SKIP_WITHOUT_GPU();
  uint64_t seed = 100;
  for (int gpus = FewestGpus(); gpus <= Gpus(); ++gpus) {
    for (const size_t count : {size_t(5), size_t(1003)}) {
      for (const bool nesterov : {false, true}) {
        for (const size_t partitions : {size_t(0), size_t(2)}) {
          ++seed;
          const std::string where = std::to_string(gpus) + " GPUs, " + std::to_string(count) + " values, " +
                                    (nesterov ? "Nesterov" : "heavy ball") + ", " + std::to_string(partitions) +
                                    " partitions";
          Replicas replicas(Layout(gpus, 2), count, seed);
          std::vector<std::vector<float>> host = replicas.host;
          merge::GlobalModel global;
          global.MutableCurrent() = Replicas({0}, count, seed + 1).host[0];
          global.MutablePrevious() = Replicas({0}, count, seed + 2).host[0];
          RingAllReduce ring(replicas.View(), count, partitions);
          ring.SetGlobalModel(global.current().data(), global.previous().data());
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
            ring.WeightedAllReduce(w, DeviceMomentum{0.9, nesterov});
            std::vector<float> current(count), previous(count);
            ring.GetGlobalModel(current.data(), previous.data());
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
              DeviceGuard guard(replicas.gpus[i]);
              XMLT_CUDA_CHECK(cudaMemcpy(replicas.device[i].data(), host[i].data(), count * sizeof(float),
                                         cudaMemcpyHostToDevice));
            }
          }
        }
      }
    }
  }
}

TEST(CudaRingAllReduce, SquaredNormsAreEachReplicasSumOfSquaresInDouble) {
  XMLT_SKIP_WITHOUT_GPU();
  const size_t count = 5003;
  Replicas replicas(Layout(Gpus(), 2), count, 7);
  RingAllReduce ring(replicas.View(), count);
  const std::vector<double> norms = ring.SquaredNorms();
  ASSERT_EQ(norms.size(), replicas.gpus.size());
  for (size_t i = 0; i < norms.size(); ++i) {
    double expected = 0;
    for (const float v : replicas.host[i]) expected += double(v) * v;
    EXPECT_NEAR(norms[i], expected, 1e-12 * expected) << "replica " << i;
  }
}

TEST(CudaRingAllReduce, RefusesAWrongWeightCountAndNoReplicas) {
  XMLT_SKIP_WITHOUT_GPU();
  Replicas replicas({0, 0}, 10, 3);
  RingAllReduce ring(replicas.View(), 10);
  EXPECT_THROW(ring.WeightedAllReduce({1.0}), std::invalid_argument);
  EXPECT_THROW(RingAllReduce({}, 10), std::invalid_argument);
  EXPECT_THROW(RingAllReduce({{nullptr, 0}}, 10), std::invalid_argument);
  EXPECT_THROW(ring.WeightedAllReduce({1.0, 1.0}, DeviceMomentum{0.9, false}), std::logic_error);  // no w, w_p yet
}

#ifdef XMLT_GPUSIM
// The ring is a ring: over a merge each GPU sends and receives 2(N-1)/N of the model (up to one
// value per chunk where the model does not divide evenly), replicas of one GPU move nothing, and
// with peer access no byte goes through host memory.
TEST(CudaRingAllReduceSim, EachGpuMovesTwoNMinusOneOverNOfTheModelAndNothingTouchesTheHost) {
  XMLT_SKIP_WITHOUT_GPU();
  const int gpus = Gpus();
  const size_t count = 10007;
  for (const size_t partitions : {size_t(1), size_t(0)}) {
    Replicas replicas(Layout(gpus, 2), count, 11);
    RingAllReduce ring(replicas.View(), count, partitions);
    gpusim::ResetTraffic();
    ring.WeightedAllReduce(RandomWeights(replicas.gpus.size(), 11));
    const double model = double(count) * sizeof(float);
    const double expected = 2.0 * (gpus - 1) / gpus * model;
    const double slack = 2.0 * gpus * double(ring.partitions()) * sizeof(float);
    for (int g = 0; g < gpus; ++g) {
      const gpusim::Traffic t = gpusim::TrafficOf(g);
      SCOPED_TRACE("GPU " + std::to_string(g) + " of " + std::to_string(gpus) + ", " +
                   std::to_string(ring.partitions()) + " partitions");
      EXPECT_NEAR(double(t.peer_sent), expected, slack);
      EXPECT_NEAR(double(t.peer_received), expected, slack);
      if (ring.peer_access()) {
        EXPECT_EQ(t.to_host, 0u);
        EXPECT_EQ(t.from_host, 0u);
      } else {  // staged by the runtime: each byte sent goes down to the host and up again
        EXPECT_EQ(t.to_host, t.peer_sent);
        EXPECT_EQ(t.from_host, t.peer_received);
      }
    }
  }
}
#endif

}  // namespace
}  // namespace xmlt::merge::gpu
