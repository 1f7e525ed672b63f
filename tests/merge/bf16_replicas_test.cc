// Replicas that keep their weights in bf16 (--weights bf16), merged by the host collectives: each
// collective gives, bit for bit, what it gives on the widened values, each merged value then
// rounded with the set's noise; the norms are those of the widened values; so are the elastic
// force and Adasum; the rounding is unbiased; the copy merge, which reads fp32 replicas in place,
// refuses them. Replica counts 1..5 and
// sizes not divisible by them, across several blocks and partitions.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "kernels/cpu/stochastic_rounding.h"
#include "merge/collective.h"
#include "merge/global_momentum.h"
#include "merge/merger.h"
#include "tests/merge/bf16_replica_support.h"
#include "tests/merge/merge_test_support.h"
#include "tests/test_support.h"

namespace xmlt::merge {
namespace {

using kernels::cpu::NearestBf16;
using kernels::cpu::RoundingNoise;
using kernels::cpu::StochasticBf16;
using kernels::cpu::WidenBf16;
using testing::Bf16Replicas;
using testing::MovedFinish;
using testing::RandomBf16Replicas;
using testing::Replicas;
using testing::RandomReplicas;

const char* const kNames[] = {"ring", "tree", "naive"};

std::vector<double> Weights(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> dist(0.05, 0.9);
  std::vector<double> w(n);
  for (auto& x : w) x = dist(rng);
  return w;
}

GlobalModel RandomGlobal(size_t size, uint32_t seed) {
  const Replicas r = RandomReplicas(2, size, seed);
  return GlobalModel(r.data[0], r.data[1]);
}

double Sum(const std::vector<double>& weights) {
  double total = 0.0;
  for (double a : weights) total += a;
  return total;
}

// Every replica's bf16 values are `values` rounded to nearest (the common start they are given).
void ExpectNearest(const Bf16Replicas& bf16, const std::vector<float>& values) {
  for (size_t i = 0; i < bf16.data.size(); ++i)
    for (size_t j = 0; j < values.size(); ++j)
      ASSERT_EQ(NearestBf16(values[j]), bf16.data[i][j]) << "replica " << i << " parameter " << j;
}

TEST(Bf16Replicas, EachCollectiveTakesTheReplicasChangesFromTheirRoundedStart) {
  for (const char* name : kNames) {
    for (size_t n = 1; n <= 5; ++n) {
      for (size_t size : {size_t{0}, size_t{1}, 7 * n + 3, size_t{3 * 4096 + 1001}, size_t{100003}}) {
        for (const MomentumMode mode : {MomentumMode::kHeavy, MomentumMode::kNesterov}) {
          SCOPED_TRACE(::testing::Message() << name << " n=" << n << " size=" << size
                                            << (mode == MomentumMode::kHeavy ? " heavy" : " nesterov"));
          Bf16Replicas bf16 = RandomBf16Replicas(n, size, uint32_t(31 * n + size));
          Replicas fp32 = bf16.Widened();
          const std::vector<double> w = Weights(n, uint32_t(n + 3));
          GlobalModel global_bf16 = RandomGlobal(size, uint32_t(size + 11));
          GlobalModel global_fp32 = global_bf16;

          const auto collective = MakeCollective(name, 3);
          EXPECT_EQ(collective->SquaredNorms(fp32.View()), collective->SquaredNorms(bf16.View()));
          collective->WeightedAllReduce(fp32.View(), w, MovedFinish(&global_fp32, 0.5, mode, Sum(w)));
          collective->WeightedAllReduceWithMomentum(bf16.View(), w, 0.5, mode, &global_bf16);

          ASSERT_TRUE(xmlt::testing::SameBits(global_fp32.current().data(), global_bf16.current().data(), size));
          ASSERT_TRUE(xmlt::testing::SameBits(global_fp32.previous().data(), global_bf16.previous().data(), size));
          ExpectNearest(bf16, fp32.data.empty() ? std::vector<float>{} : fp32.data[0]);
        }
      }
    }
  }
}

// Replicas that took no step since the merge that gave them their (rounded) start leave w where
// fp32 replicas would: w + gamma (w - w_p), whatever the rounding, for the weighted sums and for
// Adasum (whose deltas are then exactly 0). Taken from w itself, the rounding would enter w at
// every merge and the global momentum would carry it on.
TEST(Bf16Replicas, ReplicasThatTookNoStepMoveWAsFp32ReplicasWould) {
  const size_t n = 3, size = 3 * 4096 + 77;
  for (const MomentumMode mode : {MomentumMode::kHeavy, MomentumMode::kNesterov}) {
    SCOPED_TRACE(mode == MomentumMode::kHeavy ? "heavy" : "nesterov");
    const GlobalModel start = RandomGlobal(size, 61);
    Replicas fp32;
    Bf16Replicas bf16;
    bf16.key = 7;
    for (size_t i = 0; i < n; ++i) {
      fp32.data.emplace_back(size);
      bf16.data.emplace_back(size);
      for (size_t j = 0; j < size; ++j) {
        const float w = start.current()[j], wp = start.previous()[j];
        fp32.data[i][j] = mode == MomentumMode::kNesterov ? w + 0.5f * (w - wp) : w;
        bf16.data[i][j] = NearestBf16(fp32.data[i][j]);
      }
    }
    MergeOptions options;
    options.momentum = 0.5;
    options.momentum_mode = mode;
    for (const bool adasum : {false, true}) {
      SCOPED_TRACE(adasum ? "adasum" : "average");
      Replicas fp32_copy = fp32;
      Bf16Replicas bf16_copy = bf16;
      GlobalModel from_fp32 = start, from_bf16 = start;
      const auto merger = [&] {
        return adasum ? MakeAdasumMerger(options) : MakeAverageMerger(options, MakeCollective("ring", n));
      };
      merger()->Merge(fp32_copy.View(), MergeInput{}, &from_fp32);
      merger()->Merge(bf16_copy.View(), MergeInput{}, &from_bf16);
      for (size_t j = 0; j < size; ++j) {
        // Adasum adds deltas of exactly 0; the average sums thirds of the rounded start and of the
        // rounding apart, within a few float roundings of the fp32 sum of the start.
        const float tolerance = adasum ? 0.0f : 4e-7f * (std::abs(from_fp32.current()[j]) + 1.0f);
        ASSERT_NEAR(from_fp32.current()[j], from_bf16.current()[j], tolerance) << "parameter " << j;
      }
    }
  }
}

// The adaptive merge with its perturbation in force: the norms that decide it and the weights are
// those of the widened replicas, and w the sum of their changes from their rounded start.
TEST(Bf16Replicas, TheNormalizedMergeIsTheMergeOfTheWidenedReplicas) {
  const size_t n = 3, size = 10007;
  Bf16Replicas bf16 = RandomBf16Replicas(n, size, 5);
  Replicas fp32 = bf16.Widened();
  MergeOptions options;
  options.pert_threshold = 1.0;  // every replica counts as regularized: the perturbation applies
  options.renormalize_perturbed = false;  // the weights sum to more than 1
  MergeInput input;
  input.batch = {64, 96, 128};
  input.updates = {4, 3, 2};
  GlobalModel global_bf16 = RandomGlobal(size, 9);
  GlobalModel global_fp32 = global_bf16;
  const MergeOutcome from_bf16 =
      MakeNormalizedMerger(options, MakeCollective("ring", n))->Merge(bf16.View(), input, &global_bf16);
  Replicas norms_of = bf16.Widened();
  const MergeOutcome from_fp32 =
      MakeNormalizedMerger(options, MakeCollective("ring", n))->Merge(norms_of.View(), input, &global_fp32);
  EXPECT_TRUE(from_bf16.perturbed);
  EXPECT_EQ(from_fp32.weights, from_bf16.weights);
  EXPECT_GT(Sum(from_bf16.weights), 1.0);
  global_fp32 = RandomGlobal(size, 9);
  MakeCollective("ring", n)->WeightedAllReduce(fp32.View(), from_bf16.weights,
                                               MovedFinish(&global_fp32, options.momentum, MomentumMode::kHeavy,
                                                           Sum(from_bf16.weights)));
  ASSERT_TRUE(xmlt::testing::SameBits(global_fp32.current().data(), global_bf16.current().data(), size));
  ExpectNearest(bf16, global_bf16.current());
}

// The elastic force (EASGD, CROSSBOW), where each replica keeps its own state: the center is the
// one of the widened replicas, each replica its own pulled value rounded with the set's noise.
TEST(Bf16Replicas, TheElasticForceIsTheMergeOfTheWidenedReplicas) {
  for (size_t n : {size_t{2}, size_t{3}}) {
    const size_t size = 3 * 4096 + 17;
    SCOPED_TRACE(n);
    Bf16Replicas bf16 = RandomBf16Replicas(n, size, uint32_t(41 + n));
    Replicas fp32 = bf16.Widened();
    MergeOptions options;
    options.elastic_alpha = 0.3;
    GlobalModel global_bf16 = RandomGlobal(size, 43);
    GlobalModel global_fp32 = global_bf16;
    const auto merger = MakeElasticForceMerger(options, MakeCollective("ring", n));
    merger->Merge(fp32.View(), MergeInput{}, &global_fp32);
    merger->Merge(bf16.View(), MergeInput{}, &global_bf16);
    ASSERT_TRUE(xmlt::testing::SameBits(global_fp32.current().data(), global_bf16.current().data(), size));
    ASSERT_TRUE(xmlt::testing::SameBits(global_fp32.previous().data(), global_bf16.previous().data(), size));
    for (size_t i = 0; i < n; ++i)
      for (size_t j = 0; j < size; ++j)
        ASSERT_EQ(StochasticBf16(fp32.data[i][j], RoundingNoise(bf16.key, j)), bf16.data[i][j])
            << "replica " << i << " parameter " << j;
  }
}

// Adasum per tensor, over trees of one to three levels, both momentum modes: each pass widens the
// replicas and combines the levels before it again, the deltas taken from the replicas' rounded
// start. w is, within float roundings, fp32 Adasum's over replicas that made the same changes
// from the unrounded start, and every replica gets its next start rounded to nearest.
TEST(Bf16Replicas, AdasumIsTheMergeOfTheReplicasChanges) {
  for (size_t n : {size_t{1}, size_t{2}, size_t{3}, size_t{4}, size_t{5}, size_t{8}}) {
    for (const MomentumMode mode : {MomentumMode::kHeavy, MomentumMode::kNesterov}) {
      const size_t size = 2 * 8192 + 4099;
      SCOPED_TRACE(::testing::Message() << "n=" << n << (mode == MomentumMode::kHeavy ? " heavy" : " nesterov"));
      Bf16Replicas bf16 = RandomBf16Replicas(n, size, uint32_t(53 + n));
      GlobalModel global_bf16 = RandomGlobal(size, 59);
      GlobalModel global_fp32 = global_bf16;
      Replicas fp32 = bf16.Widened();
      for (size_t j = 0; j < size; ++j) {
        const float w = global_fp32.current()[j], wp = global_fp32.previous()[j];
        const float start = mode == MomentumMode::kNesterov ? w + 0.5f * (w - wp) : w;
        for (size_t i = 0; i < n; ++i) fp32.data[i][j] = start + (fp32.data[i][j] - WidenBf16(NearestBf16(start)));
      }
      ReplicaSet bf16_set = bf16.View(), fp32_set = fp32.View();
      bf16_set.tensors = fp32_set.tensors = {0, 5000, 5001, 8192 + 3};  // a tensor across chunks, one of a value
      MergeOptions options;
      options.momentum = 0.5;
      options.momentum_mode = mode;
      MakeAdasumMerger(options)->Merge(fp32_set, MergeInput{}, &global_fp32);
      MakeAdasumMerger(options)->Merge(bf16_set, MergeInput{}, &global_bf16);
      std::vector<float> starts(size);
      for (size_t j = 0; j < size; ++j) {
        const float got = global_bf16.current()[j], want = global_fp32.current()[j];
        ASSERT_NEAR(want, got, 2e-5f * (std::abs(want) + 1.0f)) << "parameter " << j;
        const float wp = global_bf16.previous()[j];
        starts[j] = mode == MomentumMode::kNesterov ? got + 0.5f * (got - wp) : got;
      }
      ExpectNearest(bf16, starts);
    }
  }
}

// The rank sum's partial sums (ReplicaSet::sums_only): each collective hands its finish the sums it
// gives an ordinary set, bit for bit, and leaves the bf16 replicas as they were; an fp32 set,
// which the tree sums in place, is refused.
TEST(Bf16Replicas, ASumsOnlySetGivesTheSumsAndWritesNothing) {
  for (const char* name : kNames) {
    for (size_t n : {size_t{1}, size_t{3}, size_t{4}}) {
      SCOPED_TRACE(::testing::Message() << name << " n=" << n);
      const size_t size = 2 * 4096 + 77;
      Bf16Replicas bf16 = RandomBf16Replicas(n, size, uint32_t(n + 40));
      const Bf16Replicas before = bf16;
      const std::vector<double> w = Weights(n, uint32_t(n));
      std::vector<float> sums(size), expected(size);
      const auto copy_into = [](std::vector<float>* out) {
        return [out](size_t begin, size_t end, float* values) { std::copy(values, values + (end - begin), out->data() + begin); };
      };
      ReplicaSet set = bf16.View();
      set.sums_only = true;
      MakeCollective(name, 3)->WeightedAllReduce(set, w, copy_into(&sums));
      EXPECT_EQ(bf16.data, before.data) << "a sums-only set was written";
      MakeCollective(name, 3)->WeightedAllReduce(bf16.View(), w, copy_into(&expected));
      EXPECT_TRUE(xmlt::testing::SameBits(sums.data(), expected.data(), size));
      Replicas fp32 = before.Widened();
      ReplicaSet fp32_set = fp32.View();
      fp32_set.sums_only = true;
      EXPECT_THROW(MakeCollective(name, 3)->WeightedAllReduce(fp32_set, w, copy_into(&sums)), std::logic_error);
    }
  }
}

// The copy merge copies the replica's fp32 values (a bf16 one is streamed instead,
// run/survivor_merge.h): it refuses bf16 replicas, as every collective refuses a mixed set.
TEST(Bf16Replicas, TheMergesThatReadFp32ReplicasInPlaceRefuseThem) {
  const size_t n = 3, size = 101;
  Bf16Replicas bf16 = RandomBf16Replicas(n, size, 23);
  GlobalModel global = RandomGlobal(size, 29);
  MergeInput input;
  Bf16Replicas one = RandomBf16Replicas(1, size, 31);
  EXPECT_THROW(MakeCopyMerger()->Merge(one.View(), input, &global), std::invalid_argument);
  EXPECT_THROW(MakeAdasumMerger({})->Merge([&] {
    ReplicaSet mixed = bf16.View();
    mixed.members[2] = {one.Widened().data[0].data()};
    return mixed;
  }(), input, &global), std::invalid_argument);
  // Some replicas in bf16 and some in fp32: refused by every collective.
  Replicas fp32 = bf16.Widened();
  ReplicaSet mixed = bf16.View();
  mixed.members[1] = {fp32.data[1].data()};
  for (const char* name : kNames) {
    EXPECT_THROW(MakeCollective(name, n)->WeightedAllReduce(mixed, Weights(n, 1), nullptr), std::invalid_argument);
    EXPECT_THROW(MakeCollective(name, n)->SquaredNorms(mixed), std::invalid_argument);
  }
}

}  // namespace
}  // namespace xmlt::merge
