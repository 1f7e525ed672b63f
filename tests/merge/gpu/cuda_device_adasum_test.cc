// The Adasum merge on GPU replicas (merge/gpu/device_adasum.h) against the host's Adasum merger
// (merge::MakeAdasumMerger) on host copies of the same replicas: 1 to 8 replicas over 1 to 8 GPUs
// (as many as there are), several replicas per GPU and interleaved, model sizes 1, 7 and 1003 (below
// the GPU count and not divisible by it) in 1 or 3 tensors, heavy-ball and Nesterov momentum, three
// merges in a row with the replicas moved between them. Also zero deltas (a squared norm below
// DBL_MIN: coefficient 1), one replica's or every replica's, the non-power-of-two trees of 3, 5, 6
// and 7 replicas against the nested formulas of merge/merger.h in double, and on the simulated
// GPUs the bytes each GPU moves (the halving schedule's, 2 (N - 1) / N of the model plus the dots'
// scalars with one replica on each of 2^k GPUs), none of them through host memory when peer access
// is allowed. ctest runs these tests on 2 simulated GPUs, on 8, and on 4 without peer access.
//
// The bound, per value j: |device - host| <= 1e-5 (|w_j| + |w_p_j| + sum_i |d_ij|), with w, w_p the
// host's before the merge and d_i the host's deltas. Both sides compute the same float expressions
// in the same tree order; they differ by float rounding where the device contracts a product and
// a sum into one FMA, by a float coefficient one unit apart where the double dots (summed in
// another order) round differently, and by what earlier merges left. A value goes through about 30
// roundings of 2^-24 (delta, up to 4 levels of combination, the update), each relative to
// operands of at most about the magnitude above (the coefficients stay near 1 for these random
// deltas, so an intermediate is at most a few times sum_i |d_ij|), and the momentum (gamma 0.9)
// carries an earlier merge's error into the next up to 1 + 2 gamma times: about 100 units of
// 2^-24, 6e-6, of that magnitude after three merges.
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
#include "merge/adasum.h"
#include "merge/gpu/device_adasum.h"
#include "merge/merger.h"
#include "tests/kernels/cuda_test_gate.h"
#include "tests/merge/gpu/gpu_replicas_support.h"
#ifdef XMLT_GPUSIM
#include "gpusim/traffic.h"
#endif

namespace xmlt::merge::gpu {
namespace {

constexpr double kGamma = 0.9;
constexpr double kRelative = 1e-5;

using testing::FewestGpus;
using testing::Gpus;
using testing::Normal;
using Replicas = testing::TwinReplicas;

// Replica i's GPU for n replicas over `gpus` GPUs: consecutive replicas sharing a GPU, or the GPUs
// taken in turn (interleaved: replicas of one GPU never pair at the first level).
std::vector<int> Layout(size_t n, int gpus, bool interleaved) {
  std::vector<int> layout;
  for (size_t i = 0; i < n; ++i) layout.push_back(interleaved ? int(i % size_t(gpus)) : int(i * size_t(gpus) / n));
  return layout;
}

// tensors: the start of each of `pieces` unequal tensors of `count` values (some empty when
// count is small).
std::vector<size_t> Tensors(size_t count, int pieces) {
  if (pieces == 1) return {};
  return {0, count / 4, 2 * count / 3};
}

struct Scenario {
  std::vector<int> layout;
  size_t count = 0;
  std::vector<size_t> tensors;
  bool nesterov = false;
  uint64_t seed = 0;
  std::string where;
};

// The per-value bound of the file comment: 1e-5 of |w_j| + |w_p_j| + sum_i |d_ij|.
std::vector<double> Bounds(const Replicas& replicas, const merge::GlobalModel& global, bool nesterov) {
  const float gamma = float(kGamma);
  std::vector<double> bound(global.current().size());
  for (size_t j = 0; j < bound.size(); ++j) {
    const float w = global.current()[j], wp = global.previous()[j];
    const float start = nesterov ? w + gamma * (w - wp) : w;
    double magnitude = std::abs(w) + std::abs(wp);
    for (const std::vector<float>& x : replicas.host) magnitude += std::abs(x[j] - start);
    bound[j] = kRelative * magnitude;
  }
  return bound;
}

// `merges` merges on both sides, replica `still` (if any; kEveryReplica: all of them) left where the
// previous merge put it so that its next delta is exactly zero; after each, the replicas, w and w_p
// agree within the bound.
constexpr size_t kEveryReplica = size_t(-2);
void MergeOnBothSides(const Scenario& s, int merges, size_t still = size_t(-1)) {
  std::mt19937_64 rng(s.seed);
  std::vector<std::vector<float>> values;
  for (size_t i = 0; i < s.layout.size(); ++i) values.push_back(Normal(s.count, rng, 1.0f));
  Replicas replicas(s.layout, std::move(values));
  merge::GlobalModel global;
  global.MutableCurrent() = Normal(s.count, rng, 1.0f);
  global.MutablePrevious() = Normal(s.count, rng, 1.0f);
  merge::MergeOptions options;
  options.momentum = kGamma;
  options.momentum_mode = s.nesterov ? merge::MomentumMode::kNesterov : merge::MomentumMode::kHeavy;
  const auto host = merge::MakeAdasumMerger(options);
  DeviceAdasum device(replicas.View(), s.count, s.tensors, DeviceMomentum{kGamma, s.nesterov});
  device.SetGlobalModel(global.current().data(), global.previous().data());
  for (int m = 0; m < merges; ++m) {
    if (m > 0)
      for (size_t i = 0; i < replicas.host.size(); ++i)
        if (i != still && still != kEveryReplica) replicas.Move(i, rng, 0.1f);
    const std::vector<double> bound = Bounds(replicas, global, s.nesterov);
    merge::ReplicaSet set;
    set.size = s.count;
    set.tensors = s.tensors;
    for (std::vector<float>& h : replicas.host) set.members.push_back({h.data()});
    host->Merge(set, merge::MergeInput{}, &global);
    device.Merge();
    std::vector<float> current(s.count), previous(s.count);
    device.GetGlobalModel(current.data(), previous.data());
    const std::string where = s.where + ", merge " + std::to_string(m);
    for (size_t j = 0; j < s.count; ++j) {
      ASSERT_NEAR(current[j], global.current()[j], bound[j]) << where << ", w " << j;
      ASSERT_NEAR(previous[j], global.previous()[j], bound[j]) << where << ", w_p " << j;
    }
    for (size_t i = 0; i < replicas.host.size(); ++i) {
      const std::vector<float> got = replicas.Read(i);
      for (size_t j = 0; j < s.count; ++j)
        ASSERT_NEAR(got[j], replicas.host[i][j], bound[j]) << where << ", replica " << i << ", value " << j;
    }
    ASSERT_TRUE(device.GlobalModelFinite()) << where;
  }
}

TEST(CudaDeviceAdasum, EqualsTheHostMergerForEveryLayoutSizeTensoringAndMomentum) {
  XMLT_SKIP_WITHOUT_GPU();
  uint64_t seed = 1;
  for (size_t n = 1; n <= 8; ++n) {
    for (int gpus = FewestGpus(); gpus <= std::min(Gpus(), int(n)); ++gpus) {
      for (const bool interleaved : {false, true}) {
        if (interleaved && (gpus == 1 || size_t(gpus) == n)) continue;  // the same layout as blocked
        // The momentum rule alternates over the (count, pieces) pairs, so that each layout and
        // each count meets both rules: the rule is element-wise, before the tree (the deltas) and
        // after it, whatever the layout; both at every point doubled the longest CUDA test.
        bool nesterov = n % 2 == 1;
        for (const size_t count : {size_t(1), size_t(7), size_t(1003)}) {
          for (const int pieces : {1, 3}) {
            nesterov = !nesterov;
            Scenario s;
            s.layout = Layout(n, gpus, interleaved);
            s.count = count;
            s.tensors = Tensors(count, pieces);
            s.nesterov = nesterov;
            s.seed = ++seed;
            s.where = std::to_string(n) + " replicas on " + std::to_string(gpus) + " GPUs" +
                      (interleaved ? " interleaved" : "") + ", " + std::to_string(count) + " values in " +
                      std::to_string(pieces) + " tensors, " + (nesterov ? "Nesterov" : "heavy ball");
            MergeOnBothSides(s, 3);
            if (HasFatalFailure()) return;
          }
        }
      }
    }
  }
}

// A replica left where the previous merge put it has a delta of exactly zero (the start is
// recomputed with the same expression): its squared norm is below DBL_MIN, so both coefficients of
// its pair stay 1 and the pair's result is the other operand, not 0/0.
TEST(CudaDeviceAdasum, AZeroDeltaLeavesTheOtherOperand) {
  XMLT_SKIP_WITHOUT_GPU();
  for (const size_t n : {size_t(2), size_t(3), size_t(5), size_t(6), size_t(8)}) {
    for (const bool nesterov : {false, true}) {
      Scenario s;
      s.layout = Layout(n, std::min(Gpus(), int(n)), true);
      s.count = 1003;
      s.tensors = Tensors(s.count, 3);
      s.nesterov = nesterov;
      s.seed = 500 + n;
      s.where = std::to_string(n) + " replicas, replica " + std::to_string(n - 1) + " still, " +
                (nesterov ? "Nesterov" : "heavy ball");
      MergeOnBothSides(s, 3, n - 1);
      if (HasFatalFailure()) return;
    }
  }
  // Every delta zero (1 to 8 replicas): every coefficient stays 1, the result is 0, w' = w + the
  // momentum alone, on both sides.
  for (size_t n = 1; n <= 8; ++n) {
    Scenario s;
    s.layout = Layout(n, std::min(Gpus(), int(n)), true);
    s.count = 1003;
    s.tensors = Tensors(s.count, 3);
    s.seed = 600 + n;
    s.where = std::to_string(n) + " replicas, all still";
    MergeOnBothSides(s, 2, kEveryReplica);
    if (HasFatalFailure()) return;
  }
  // Two replicas, the second still: w' = w + d_0 + gamma (w - w_p) exactly as one replica alone.
  const size_t count = 257;
  std::mt19937_64 rng(7);
  Replicas replicas(Layout(2, std::min(Gpus(), 2), true), {Normal(count, rng, 1.0f), Normal(count, rng, 1.0f)});
  const std::vector<float> w = Normal(count, rng, 1.0f);
  DeviceAdasum adasum(replicas.View(), count, {}, DeviceMomentum{0.0, false});
  adasum.SetGlobalModel(w.data(), w.data());
  adasum.Merge();  // both replicas now hold w'
  std::vector<float> w1(count), wp1(count);
  adasum.GetGlobalModel(w1.data(), wp1.data());
  replicas.Move(0, rng, 0.1f);
  adasum.Merge();
  std::vector<float> w2(count), wp2(count);
  adasum.GetGlobalModel(w2.data(), wp2.data());
  for (size_t j = 0; j < count; ++j) {
    ASSERT_EQ(wp2[j], w1[j]) << j;
    ASSERT_EQ(w2[j], w1[j] + (replicas.host[0][j] - w1[j])) << j;
  }
}

// Adasum in double, as merge/merger.h writes it.
std::vector<double> Adasum(const std::vector<double>& a, const std::vector<double>& b) {
  double ab = 0, aa = 0, bb = 0;
  for (size_t j = 0; j < a.size(); ++j) {
    ab += a[j] * b[j];
    aa += a[j] * a[j];
    bb += b[j] * b[j];
  }
  std::vector<double> out(a.size());
  for (size_t j = 0; j < a.size(); ++j) out[j] = (1 - ab / (2 * aa)) * a[j] + (1 - ab / (2 * bb)) * b[j];
  return out;
}

// n = 3: (d0+d1)+d2, n = 5: ((d0+d1)+d2)+(d3+d4), n = 6: ((d0+d1)+(d2+d3))+(d4+d5),
// n = 7: ((d0+d1)+(d2+d3))+((d4+d5)+d6),
// on one GPU and spread over the GPUs: the device's result (w' - w, no momentum) within 1e-5 of
// the magnitudes.
TEST(CudaDeviceAdasum, NonPowerOfTwoCountsFollowTheFoldedTree) {
  XMLT_SKIP_WITHOUT_GPU();
  const size_t count = 1003;
  for (const size_t n : {size_t(3), size_t(5), size_t(6), size_t(7)}) {
    for (const int gpus : {1, std::min(Gpus(), int(n))}) {
      std::mt19937_64 rng(900 + n);
      std::vector<std::vector<float>> values;
      for (size_t i = 0; i < n; ++i) values.push_back(Normal(count, rng, 1.0f));
      Replicas replicas(Layout(n, gpus, true), values);
      const std::vector<float> w(count, 0.0f);  // the deltas are the replicas themselves
      DeviceAdasum adasum(replicas.View(), count, {}, DeviceMomentum{0.0, false});
      adasum.SetGlobalModel(w.data(), w.data());
      adasum.Merge();
      std::vector<float> result(count), previous(count);
      adasum.GetGlobalModel(result.data(), previous.data());
      std::vector<std::vector<double>> d;
      for (const std::vector<float>& v : values) d.emplace_back(v.begin(), v.end());
      std::vector<double> expected;
      if (n == 3) expected = Adasum(Adasum(d[0], d[1]), d[2]);
      if (n == 5) expected = Adasum(Adasum(Adasum(d[0], d[1]), d[2]), Adasum(d[3], d[4]));
      if (n == 6) expected = Adasum(Adasum(Adasum(d[0], d[1]), Adasum(d[2], d[3])), Adasum(d[4], d[5]));
      if (n == 7)
        expected = Adasum(Adasum(Adasum(d[0], d[1]), Adasum(d[2], d[3])), Adasum(Adasum(d[4], d[5]), d[6]));
      for (size_t j = 0; j < count; ++j) {
        double magnitude = 0;
        for (const std::vector<double>& x : d) magnitude += std::abs(x[j]);
        ASSERT_NEAR(result[j], expected[j], kRelative * magnitude)
            << n << " replicas on " << gpus << " GPUs, value " << j;
      }
    }
  }
}

TEST(CudaDeviceAdasum, GlobalModelFiniteCountsOnTheGpus) {
  XMLT_SKIP_WITHOUT_GPU();
  const size_t count = 1003;
  std::mt19937_64 rng(3);
  Replicas replicas(Layout(3, std::min(Gpus(), 3), false), {Normal(count, rng, 1.0f), Normal(count, rng, 1.0f),
                                                           Normal(count, rng, 1.0f)});
  DeviceAdasum adasum(replicas.View(), count, {}, DeviceMomentum{kGamma, false});
  std::vector<float> w = Normal(count, rng, 1.0f);
  for (const size_t bad : {size_t(0), size_t(500), count - 1}) {
    std::vector<float> broken = w;
    broken[bad] = bad == 500 ? INFINITY : NAN;
    adasum.SetGlobalModel(broken.data(), w.data());
    EXPECT_FALSE(adasum.GlobalModelFinite()) << "value " << bad;
  }
  adasum.SetGlobalModel(w.data(), w.data());
  EXPECT_TRUE(adasum.GlobalModelFinite());
}

TEST(CudaDeviceAdasum, RefusesNoReplicasNullParametersBadTensorsAndAMergeWithoutAGlobalModel) {
  XMLT_SKIP_WITHOUT_GPU();
  std::mt19937_64 rng(5);
  Replicas replicas({0, 0}, {Normal(10, rng, 1.0f), Normal(10, rng, 1.0f)});
  EXPECT_THROW(DeviceAdasum({}, 10, {}, {}), std::invalid_argument);
  EXPECT_THROW(DeviceAdasum({{nullptr, 0}}, 10, {}, {}), std::invalid_argument);
  for (const std::vector<size_t>& tensors : {std::vector<size_t>{1}, {0, 5, 3}, {0, 11}})
    EXPECT_THROW(DeviceAdasum(replicas.View(), 10, tensors, {}), std::invalid_argument);
  DeviceAdasum adasum(replicas.View(), 10, {0, 4, 10}, {});
  EXPECT_THROW(adasum.Merge(), std::logic_error);
  EXPECT_EQ(adasum.gpus(), 1u);
}

#ifdef XMLT_GPUSIM
// The bytes each GPU sends and receives in one merge, from the schedule written out here on its
// own: n = P + m replicas (P a power of two); the m folded pairs (2i, 2i + 1) move a model right to
// left across GPUs; operand j (replica 2j for j < m, j + m after) swaps ranges with operand j XOR d
// at d = 1, 2, 4, ..., pulling the half it keeps (the lower one when j & d is 0), and fetches 3
// doubles per tensor and pipeline chunk from every other holder of operands j0 .. j0 + 2d - 1 (j0 =
// j rounded down to a multiple of 2d); then every GPU gathers each operand's final range into its
// first replica.
// Only what crosses GPUs counts.
struct Expected {
  std::vector<uint64_t> sent, received;
};
Expected HalvingTraffic(const std::vector<int>& layout, size_t count, size_t tensors) {
  Expected e{std::vector<uint64_t>(8, 0), std::vector<uint64_t>(8, 0)};
  auto move = [&](int from, int to, uint64_t bytes) {
    if (from == to) return;
    e.sent[size_t(from)] += bytes;
    e.received[size_t(to)] += bytes;
  };
  const size_t n = layout.size();
  size_t power = 1;
  while (2 * power <= n) power *= 2;
  const size_t folded = n - power;
  for (size_t i = 0; i < folded; ++i) move(layout[2 * i + 1], layout[2 * i], count * sizeof(float));
  std::vector<int> gpu(power);
  for (size_t j = 0; j < power; ++j) gpu[j] = layout[j < folded ? 2 * j : j + folded];
  std::vector<size_t> lo(power, 0), hi(power, count);
  for (size_t d = 1; d < power; d *= 2) {
    for (size_t j = 0; j < power; ++j) {
      const size_t mid = lo[j] + (hi[j] - lo[j]) / 2;
      const size_t keep = (j & d) == 0 ? mid - lo[j] : hi[j] - mid;
      move(gpu[j ^ d], gpu[j], keep * sizeof(float));
      for (size_t k = j / (2 * d) * (2 * d); k < j / (2 * d) * (2 * d) + 2 * d; ++k)
        move(gpu[k], gpu[j], DeviceAdasum::kPipelineChunks * 3 * tensors * sizeof(double));
    }
    for (size_t j = 0; j < power; ++j) {
      const size_t mid = lo[j] + (hi[j] - lo[j]) / 2;
      if ((j & d) == 0) hi[j] = mid; else lo[j] = mid;
    }
  }
  std::vector<int> gpus;  // each GPU once
  for (const int g : layout)
    if (std::find(gpus.begin(), gpus.end(), g) == gpus.end()) gpus.push_back(g);
  for (const int g : gpus)
    for (size_t j = 0; j < power; ++j) move(gpu[j], g, (hi[j] - lo[j]) * sizeof(float));
  return e;
}

// Runs one merge of `layout` and checks each GPU's traffic against the schedule; returns the
// bytes GPU g sent and received.
std::vector<gpusim::Traffic> MergeAndCheckTraffic(const std::vector<int>& layout, size_t count,
                                                  const std::vector<size_t>& tensors, const std::string& where) {
  std::mt19937_64 rng(11 + layout.size());
  std::vector<std::vector<float>> values;
  for (size_t i = 0; i < layout.size(); ++i) values.push_back(Normal(count, rng, 1.0f));
  Replicas replicas(layout, std::move(values));
  DeviceAdasum adasum(replicas.View(), count, tensors, DeviceMomentum{kGamma, true});
  const std::vector<float> w = Normal(count, rng, 1.0f);
  adasum.SetGlobalModel(w.data(), w.data());
  gpusim::ResetTraffic();
  adasum.Merge();
  const Expected e = HalvingTraffic(layout, count, std::max<size_t>(1, tensors.size()));
  std::vector<gpusim::Traffic> traffic;
  for (int g = 0; g < Gpus(); ++g) {
    const gpusim::Traffic t = gpusim::TrafficOf(g);
    SCOPED_TRACE(where + ", GPU " + std::to_string(g));
    EXPECT_EQ(t.peer_sent, e.sent[size_t(g)]);
    EXPECT_EQ(t.peer_received, e.received[size_t(g)]);
    if (adasum.peer_access()) {
      EXPECT_EQ(t.to_host, 0u);
      EXPECT_EQ(t.from_host, 0u);
    } else {  // staged by the runtime: each byte sent goes down to the host and up again
      EXPECT_EQ(t.to_host, t.peer_sent);
      EXPECT_EQ(t.from_host, t.peer_received);
    }
    traffic.push_back(t);
  }
  return traffic;
}

TEST(CudaDeviceAdasumSim, EveryGpuMovesWhatTheHalvingScheduleSaysAndNothingThroughTheHost) {
  XMLT_SKIP_WITHOUT_GPU();
  for (const size_t count : {size_t(5), size_t(10007)}) {  // below the replica count, and not divisible
    for (size_t n = 1; n <= 8; ++n) {
      for (const bool interleaved : {false, true}) {
        const int gpus = std::min(Gpus(), int(n));
        const std::vector<int> layout = Layout(n, gpus, interleaved);
        MergeAndCheckTraffic(layout, count, {0, count / 3},
                             std::to_string(n) + " replicas on " + std::to_string(gpus) + " GPUs" +
                                 (interleaved ? " interleaved" : "") + ", " + std::to_string(count) + " values");
        if (HasFatalFailure()) return;
      }
    }
  }
  // Four replicas of one GPU: no peer traffic at all.
  for (const gpusim::Traffic& t : MergeAndCheckTraffic({0, 0, 0, 0}, 10007, {}, "cuda:0x4"))
    EXPECT_EQ(t.peer_sent + t.peer_received, 0u);
}

// One replica on each of 2^k GPUs and a model divisible by their count: each GPU sends and
// receives exactly 2 (N - 1) / N of the model (as in a ring), plus 3 doubles per tensor and pipeline
// chunk from each other member of each level's group, sum over levels of 2^(l+1) - 1.
TEST(CudaDeviceAdasumSim, OneReplicaPerGpuMovesTwoNMinusOneOverNOfTheModelPlusScalars) {
  XMLT_SKIP_WITHOUT_GPU();
  const int gpus = Gpus();
  if ((gpus & (gpus - 1)) != 0) GTEST_SKIP() << gpus << " GPUs: not a power of two";
  const size_t count = 8 * 1259;
  const std::vector<size_t> tensors = {0, count / 3, count / 2};
  std::vector<int> layout;
  for (int g = 0; g < gpus; ++g) layout.push_back(g);
  const uint64_t model = count * sizeof(float);
  uint64_t scalars = 0;
  for (int group = 2; group <= gpus; group *= 2)
    scalars += uint64_t(group - 1) * DeviceAdasum::kPipelineChunks * 3 * tensors.size() * sizeof(double);
  const uint64_t expected = 2 * uint64_t(gpus - 1) * model / uint64_t(gpus) + scalars;
  for (const gpusim::Traffic& t : MergeAndCheckTraffic(layout, count, tensors, "one replica per GPU")) {
    EXPECT_EQ(t.peer_sent, expected);
    EXPECT_EQ(t.peer_received, expected);
  }
}
#endif

}  // namespace
}  // namespace xmlt::merge::gpu
