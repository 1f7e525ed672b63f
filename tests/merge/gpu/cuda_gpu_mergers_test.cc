// The merges on the GPUs (merge/gpu/) against the host merges (merge/merger.h) on copies of the same
// replicas: normalized (Algorithm 2 with its perturbation, weights that do not sum to 1; on the ring
// and on NCCL), average,
// gradient, Adasum, the copy of one replica, and the elastic force (EASGD, CROSSBOW), heavy-ball and
// Nesterov where they apply, three merges in a row with the replicas moved between them as
// training moves them. Every layout of 1 to 8 GPUs (as many as there are) with one or two
// replicas each, or interleaved; models of 1, 7 and 1003 values (smaller than the replica count,
// not divisible by it). The bound: both sides compute in float, summing in other orders, so each
// value may differ by a few float roundings of the magnitudes summed: 1e-5 (1 + |value|) over
// three merges with replicas of magnitude about 1. On the simulated GPUs, also: after the first
// merge (which uploads w and w_p), a merge moves no byte of the model through host memory.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/device_buffer.h"
#include "kernels/cuda/device_count.h"
#include "merge/collective.h"
#include "merge/gpu/gpu_mergers.h"
#include "merge/merger.h"
#include "tests/kernels/cuda_test_gate.h"
#include "tests/merge/gpu/gpu_replicas_support.h"
#ifdef XMLT_GPUSIM
#include "gpusim/traffic.h"
#endif

namespace xmlt::merge::gpu {
namespace {

using kernels::cuda::DeviceBuffer;
using kernels::cuda::DeviceGuard;

using testing::FewestGpus;
using testing::Gpus;
using testing::Layout;

// The same replicas on the host and on the GPUs.
struct Twins {
  std::vector<int> gpus;
  std::vector<std::vector<float>> host;
  std::vector<DeviceBuffer<float>> device;
  size_t count;

  Twins(std::vector<int> gpu_of, size_t n, uint64_t seed) : gpus(std::move(gpu_of)), count(n) {
    std::mt19937_64 rng(seed);
    std::normal_distribution<float> normal(0.0f, 0.05f);
    for (const int gpu : gpus) {
      host.emplace_back(count);
      for (float& v : host.back()) v = normal(rng);
      DeviceGuard guard(gpu);
      device.push_back(DeviceBuffer<float>::FromHost(host.back()));
    }
  }
  ReplicaSet HostSet(const std::vector<size_t>& tensors) {
    ReplicaSet set;
    set.size = count;
    set.tensors = tensors;
    for (std::vector<float>& h : host) set.members.push_back({h.data()});
    return set;
  }
  ReplicaSet GpuSet(const std::vector<size_t>& tensors) {
    ReplicaSet set;
    set.size = count;
    set.tensors = tensors;
    for (size_t i = 0; i < gpus.size(); ++i) set.members.push_back({device[i].data(), gpus[i]});
    return set;
  }
  std::vector<float> Read(size_t i) const {
    DeviceGuard guard(gpus[i]);
    return device[i].ToHost();
  }
  // A local step: the same random move on both sides.
  void Move(std::mt19937_64& rng) {
    std::normal_distribution<float> step(0.0f, 0.01f);
    for (size_t i = 0; i < host.size(); ++i) {
      for (float& v : host[i]) v += step(rng);
      DeviceGuard guard(gpus[i]);
      XMLT_CUDA_CHECK(cudaMemcpy(device[i].data(), host[i].data(), count * sizeof(float), cudaMemcpyHostToDevice));
    }
  }
};

// A merge under test: the host one and the GPU one, built the same way.
struct MergeCase {
  std::string name;
  MergeOptions options;
  std::function<std::unique_ptr<Merger>(const MergeOptions&)> host;
  std::function<std::unique_ptr<Merger>(const MergeOptions&, const ReplicaSet&)> gpu;
  bool one_replica = false;  // the copy merge
  bool one_step = false;     // gradient: at most one update per replica
};

std::vector<MergeCase> Cases() {
  std::vector<MergeCase> cases;
  const auto ring = [](const ReplicaSet& r) { return MakeGpuCollective(GpuCollectiveKind::kRing, r); };
  const auto nccl = [](const ReplicaSet& r) { return MakeGpuCollective(GpuCollectiveKind::kNccl, r); };
  for (const MomentumMode mode : {MomentumMode::kHeavy, MomentumMode::kNesterov}) {
    const std::string suffix = mode == MomentumMode::kHeavy ? " (heavy ball)" : " (Nesterov)";
    MergeOptions o;
    o.momentum = 0.9;
    o.momentum_mode = mode;
    // Perturbed with the weights left unnormalized: they sum to 1 + delta (alpha_r - alpha_s).
    o.pert_threshold = 1.0;
    o.pert_delta = 0.1;
    o.renormalize_perturbed = false;
    cases.push_back({"normalized" + suffix, o, [](const MergeOptions& m) { return MakeNormalizedMerger(m, MakeNaiveCollective()); },
                     [ring](const MergeOptions& m, const ReplicaSet& r) { return MakeNormalizedMerger(m, ring(r)); }});
    cases.push_back({"normalized on NCCL" + suffix, o,
                     [](const MergeOptions& m) { return MakeNormalizedMerger(m, MakeNaiveCollective()); },
                     [nccl](const MergeOptions& m, const ReplicaSet& r) { return MakeNormalizedMerger(m, nccl(r)); }});
    cases.push_back({"average" + suffix, o, [](const MergeOptions& m) { return MakeAverageMerger(m, MakeNaiveCollective()); },
                     [ring](const MergeOptions& m, const ReplicaSet& r) { return MakeAverageMerger(m, ring(r)); }});
    MergeCase gradient{"gradient" + suffix, o,
                       [](const MergeOptions& m) { return MakeGradientMerger(m, MakeNaiveCollective()); },
                       [ring](const MergeOptions& m, const ReplicaSet& r) { return MakeGradientMerger(m, ring(r)); }};
    gradient.one_step = true;
    cases.push_back(gradient);
    cases.push_back({"adasum" + suffix, o, [](const MergeOptions& m) { return MakeAdasumMerger(m); },
                     [](const MergeOptions& m, const ReplicaSet& r) { return MakeGpuAdasumMerger(m, r); }});
  }
  MergeOptions copy;
  copy.momentum = 0;
  MergeCase single{"copy of one replica (single)", copy, [](const MergeOptions&) { return MakeCopyMerger(); },
                   [ring](const MergeOptions& m, const ReplicaSet& r) { return MakeAverageMerger(m, ring(r)); }};
  single.one_replica = true;
  cases.push_back(single);
  for (const double alpha : {0.0, 0.3}) {  // 0: CROSSBOW's 1/n
    MergeOptions o;
    o.momentum = alpha > 0 ? 0.0 : 0.9;
    o.elastic_alpha = alpha;
    cases.push_back({alpha > 0 ? "elastic force (EASGD, a 0.3)" : "elastic force (CROSSBOW, a 1/n, momentum 0.9)", o,
                     [](const MergeOptions& m) { return MakeElasticForceMerger(m, MakeNaiveCollective()); },
                     [](const MergeOptions& m, const ReplicaSet& r) { return MakeGpuElasticForceMerger(m, r); }});
  }
  return cases;
}

void ExpectClose(const std::vector<float>& got, const std::vector<float>& expected, const std::string& what) {
  ASSERT_EQ(got.size(), expected.size()) << what;
  for (size_t j = 0; j < got.size(); ++j)
    ASSERT_NEAR(got[j], expected[j], 1e-5 * (1 + std::abs(expected[j]))) << what << ", value " << j;
}

TEST(CudaGpuMergers, EveryMergeOnTheGpusEqualsItsHostMergeForEveryLayoutAndSize) {
  XMLT_SKIP_WITHOUT_GPU();
  uint64_t seed = 1;
  for (const MergeCase& c : Cases()) {
    for (int gpus = FewestGpus(); gpus <= Gpus(); ++gpus) {
      for (const int per_gpu : {1, 2, 0}) {
        if (c.one_replica && (gpus > 1 || per_gpu != 1)) continue;
        for (const size_t count : {size_t(1), size_t(7), size_t(1003)}) {
          ++seed;
          const std::string where = c.name + ", " + std::to_string(gpus) + " GPUs, " + std::to_string(per_gpu) +
                                    " replicas each (0: interleaved), " + std::to_string(count) + " values";
          SCOPED_TRACE(where);
          Twins twins(Layout(gpus, per_gpu), count, seed);
          const size_t n = twins.gpus.size();
          const std::vector<size_t> tensors = count > 3 ? std::vector<size_t>{0, 2, count / 2} : std::vector<size_t>{};
          ReplicaSet host_set = twins.HostSet(tensors), gpu_set = twins.GpuSet(tensors);
          GlobalModel host_global{twins.host[0], twins.host[0]};
          GlobalModel gpu_global{twins.host[0], twins.host[0]};
          const auto host_merger = c.host(c.options);
          const auto gpu_merger = c.gpu(c.options, gpu_set);
          std::mt19937_64 rng(seed);
          for (int round = 0; round < 3; ++round) {
            MergeInput input;
            for (size_t i = 0; i < n; ++i) {
              input.batch.push_back(double(rng() % 64 + 1));
              input.updates.push_back(c.one_step ? 1 : rng() % 4 + 1);
            }
            const MergeOutcome expected = host_merger->Merge(host_set, input, &host_global);
            const MergeOutcome got = gpu_merger->Merge(gpu_set, input, &gpu_global);
            ASSERT_EQ(got.weights.size(), expected.weights.size());
            for (size_t i = 0; i < n; ++i) EXPECT_NEAR(got.weights[i], expected.weights[i], 1e-12) << "alpha " << i;
            EXPECT_EQ(got.perturbed, expected.perturbed);
            for (size_t i = 0; i < n; ++i)
              ExpectClose(twins.Read(i), twins.host[i], "round " + std::to_string(round) + ", replica " + std::to_string(i));
            ASSERT_TRUE(gpu_global.newer_on_gpus()) << "the GPU merge keeps w on the GPUs";
            ASSERT_TRUE(gpu_global.CurrentFinite());
            gpu_global.SyncToHost();
            ExpectClose(gpu_global.current(), host_global.current(), "round " + std::to_string(round) + ", w");
            ExpectClose(gpu_global.previous(), host_global.previous(), "round " + std::to_string(round) + ", w_p");
            twins.Move(rng);
          }
        }
      }
    }
  }
}

// A host write (a resume, a rollback) reaches the GPUs at the next merge; a non-finite w is seen
// there without copying w back.
TEST(CudaGpuMergers, HostWritesReachTheGpusAndNonFiniteValuesAreSeenThere) {
  XMLT_SKIP_WITHOUT_GPU();
  const size_t count = 101;
  Twins twins(Layout(Gpus(), 1), count, 5);
  ReplicaSet set = twins.GpuSet({});
  MergeOptions options;
  options.momentum = 0.5;
  const auto merger = MakeAverageMerger(options, MakeGpuCollective(GpuCollectiveKind::kRing, set));
  GlobalModel global{std::vector<float>(count, 1.0f), std::vector<float>(count, 1.0f)};
  MergeInput input;
  merger->Merge(set, input, &global);
  // Rolled back: w = w_p = 0 on the host; the next merge must start from there (momentum term 0).
  global.Assign(std::vector<float>(count, 0.0f), std::vector<float>(count, 0.0f));
  const std::vector<float> mean = [&] {
    std::vector<float> m(count, 0.0f);
    for (size_t i = 0; i < twins.host.size(); ++i)
      for (size_t j = 0; j < count; ++j) m[j] += twins.Read(i)[j] / float(twins.host.size());
    return m;
  }();
  merger->Merge(set, input, &global);
  global.SyncToHost();
  ExpectClose(global.current(), mean, "w after the rollback (no momentum from before it)");
  // A NaN in a replica: the merged w is not finite, and the GPUs say so.
  {
    DeviceGuard guard(twins.gpus[0]);
    const float nan = std::nanf("");
    XMLT_CUDA_CHECK(cudaMemcpy(twins.device[0].data() + 3, &nan, sizeof(float), cudaMemcpyHostToDevice));
  }
  merger->Merge(set, input, &global);
  EXPECT_TRUE(global.newer_on_gpus());
  EXPECT_FALSE(global.CurrentFinite());
}

TEST(CudaGpuMergers, HostMergesAndCollectivesRefuseReplicasOnGpus) {
  XMLT_SKIP_WITHOUT_GPU();
  Twins twins({0, 0}, 10, 3);
  ReplicaSet set = twins.GpuSet({});
  GlobalModel global{twins.host[0], twins.host[0]};
  MergeInput input;
  EXPECT_THROW(MakeAverageMerger({}, MakeNaiveCollective())->Merge(set, input, &global), std::invalid_argument);
  EXPECT_THROW(MakeAdasumMerger({})->Merge(set, input, &global), std::invalid_argument);
  EXPECT_THROW(MakeElasticForceMerger({}, nullptr)->Merge(set, input, &global), std::invalid_argument);
  EXPECT_THROW(MakeGpuCollective(GpuCollectiveKind::kRing, twins.HostSet({})), std::invalid_argument);
  MergeOptions nesterov;
  nesterov.momentum_mode = MomentumMode::kNesterov;
  EXPECT_THROW(MakeGpuElasticForceMerger(nesterov, set), std::invalid_argument);
}

#ifdef XMLT_GPUSIM
// After the first merge, which uploads w and w_p, a merge on the GPUs moves no byte of the model
// through host memory: the host receives only what the weights are decided on (Algorithm 2's
// norms, 8 bytes a replica) and, here, the finiteness flag (8 bytes a GPU).
TEST(CudaGpuMergersSim, NoByteOfTheModelGoesThroughTheHost) {
  XMLT_SKIP_WITHOUT_GPU();
  const int gpus = Gpus();
  const size_t count = 10007;
  for (const MergeCase& c : Cases()) {
    if (c.one_replica) continue;
    SCOPED_TRACE(c.name);
    Twins twins(Layout(gpus, 2), count, 17);
    ReplicaSet set = twins.GpuSet({});
    const auto merger = c.gpu(c.options, set);
    GlobalModel global{twins.host[0], twins.host[0]};
    MergeInput input;
    for (size_t i = 0; i < twins.gpus.size(); ++i) {
      input.batch.push_back(8);
      input.updates.push_back(1);
    }
    merger->Merge(set, input, &global);
    gpusim::ResetTraffic();
    merger->Merge(set, input, &global);
    ASSERT_TRUE(global.CurrentFinite());
    if (!gpusim::PeerAccessAllowed()) continue;  // staged peer copies go through the host by design
    for (int g = 0; g < gpus; ++g) {
      const gpusim::Traffic t = gpusim::TrafficOf(g);
      EXPECT_EQ(t.from_host, 0u) << "GPU " << g;
      EXPECT_LE(t.to_host, 8u * 2 + 8u) << "GPU " << g;
    }
  }
}
#endif

}  // namespace
}  // namespace xmlt::merge::gpu
