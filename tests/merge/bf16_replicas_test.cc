// Replicas that keep their weights in bf16 (--weights bf16), merged by the host collectives: each
// collective gives, bit for bit, what it gives on the widened values, each merged value then
// rounded with the set's noise; the norms are those of the widened values; so are the elastic
// force and Adasum; the rounding is unbiased; the copy merge, which reads fp32 replicas in place,
// refuses them. Replica counts 1..5 and
// sizes not divisible by them, across several blocks and partitions.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "kernels/cpu/stochastic_rounding.h"
#include "merge/collective.h"
#include "merge/merger.h"
#include "tests/merge/merge_test_support.h"
#include "tests/test_support.h"

namespace xmlt::merge {
namespace {

using kernels::cpu::RoundingNoise;
using kernels::cpu::StochasticBf16;
using kernels::cpu::WidenBf16;
using testing::Replicas;
using testing::RandomReplicas;

const char* const kNames[] = {"ring", "tree", "naive"};

uint16_t NearestBf16(float x) {
  uint32_t bits;
  std::memcpy(&bits, &x, sizeof bits);
  return uint16_t((bits + 0x7fffu + ((bits >> 16) & 1u)) >> 16);
}

// Replicas in bf16 and the same values widened into fp32 replicas.
struct Bf16Replicas {
  std::vector<std::vector<uint16_t>> data;
  uint32_t key = 0;
  ReplicaSet View() {
    ReplicaSet set;
    set.size = data.empty() ? 0 : data[0].size();
    for (auto& d : data) set.members.push_back({nullptr, -1, d.data()});
    set.bf16_rounding_key = key;
    return set;
  }
  Replicas Widened() const {
    Replicas r;
    for (const auto& d : data) {
      r.data.emplace_back(d.size());
      for (size_t j = 0; j < d.size(); ++j) r.data.back()[j] = WidenBf16(d[j]);
    }
    return r;
  }
};

Bf16Replicas RandomBf16Replicas(size_t n, size_t size, uint32_t seed) {
  const Replicas r = RandomReplicas(n, size, seed);
  Bf16Replicas b;
  b.key = seed * 2654435761u;
  for (const auto& d : r.data) {
    b.data.emplace_back(d.size());
    for (size_t j = 0; j < d.size(); ++j) b.data.back()[j] = NearestBf16(d[j]);
  }
  return b;
}

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

TEST(Bf16Replicas, EachCollectiveEqualsItsSumOfTheWidenedValuesRounded) {
  for (const char* name : kNames) {
    for (size_t n = 1; n <= 5; ++n) {
      for (size_t size : {size_t{0}, size_t{1}, 7 * n + 3, size_t{3 * 4096 + 1001}, size_t{100003}}) {
        for (size_t partitions : {size_t{0}, size_t{3}}) {
          SCOPED_TRACE(::testing::Message() << name << " n=" << n << " size=" << size << " P=" << partitions);
          Bf16Replicas bf16 = RandomBf16Replicas(n, size, uint32_t(31 * n + size));
          Replicas fp32 = bf16.Widened();
          const std::vector<double> w = Weights(n, uint32_t(n + 3));
          GlobalModel global_bf16 = RandomGlobal(size, uint32_t(size + 11));
          GlobalModel global_fp32 = global_bf16;

          const auto collective = MakeCollective(name, partitions);
          EXPECT_EQ(collective->SquaredNorms(fp32.View()), collective->SquaredNorms(bf16.View()));
          collective->WeightedAllReduceWithMomentum(fp32.View(), w, 0.5, MomentumMode::kHeavy, &global_fp32);
          collective->WeightedAllReduceWithMomentum(bf16.View(), w, 0.5, MomentumMode::kHeavy, &global_bf16);

          ASSERT_TRUE(xmlt::testing::SameBits(global_fp32.current().data(), global_bf16.current().data(), size));
          ASSERT_TRUE(xmlt::testing::SameBits(global_fp32.previous().data(), global_bf16.previous().data(), size));
          for (size_t i = 0; i < n; ++i)
            for (size_t j = 0; j < size; ++j)
              ASSERT_EQ(StochasticBf16(fp32.data[i][j], RoundingNoise(bf16.key, j)), bf16.data[i][j])
                  << "replica " << i << " parameter " << j;
        }
      }
    }
  }
}

// The adaptive merge with its perturbation in force: the norms that decide it, the weights and
// the global model are those of the widened replicas.
TEST(Bf16Replicas, TheNormalizedMergeIsTheMergeOfTheWidenedReplicas) {
  const size_t n = 3, size = 10007;
  Bf16Replicas bf16 = RandomBf16Replicas(n, size, 5);
  Replicas fp32 = bf16.Widened();
  MergeOptions options;
  options.pert_threshold = 1.0;  // every replica counts as regularized: the perturbation applies
  MergeInput input;
  input.batch = {64, 96, 128};
  input.updates = {4, 3, 2};
  GlobalModel global_bf16 = RandomGlobal(size, 9);
  GlobalModel global_fp32 = global_bf16;
  const MergeOutcome from_fp32 =
      MakeNormalizedMerger(options, MakeCollective("ring", n))->Merge(fp32.View(), input, &global_fp32);
  const MergeOutcome from_bf16 =
      MakeNormalizedMerger(options, MakeCollective("ring", n))->Merge(bf16.View(), input, &global_bf16);
  EXPECT_TRUE(from_bf16.perturbed);
  EXPECT_EQ(from_fp32.weights, from_bf16.weights);
  EXPECT_EQ(from_fp32.perturbed, from_bf16.perturbed);
  ASSERT_TRUE(xmlt::testing::SameBits(global_fp32.current().data(), global_bf16.current().data(), size));
  for (size_t i = 0; i < n; ++i)
    for (size_t j = 0; j < size; ++j)
      ASSERT_EQ(StochasticBf16(fp32.data[i][j], RoundingNoise(bf16.key, j)), bf16.data[i][j]);
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

// Merged values below a bf16 step survive in expectation: over 256 keys, each replica value is one
// of the merged value's two bf16 neighbours, and their mean is the merged value.
TEST(Bf16Replicas, TheMergedValuesAreRoundedWithoutBias) {
  const size_t n = 2, size = 4096, keys = 256;
  std::vector<double> sum(size, 0.0);
  std::vector<float> merged;
  for (uint32_t k = 0; k < keys; ++k) {
    Bf16Replicas bf16 = RandomBf16Replicas(n, size, 17);
    bf16.key = k * 0x9e3779b9u + 1;
    Replicas fp32 = bf16.Widened();
    MakeCollective("ring", n)->WeightedAllReduce(fp32.View(), {0.3, 0.7}, nullptr);
    MakeCollective("ring", n)->WeightedAllReduce(bf16.View(), {0.3, 0.7}, nullptr);
    merged = fp32.data[0];
    for (size_t j = 0; j < size; ++j) {
      const float got = WidenBf16(bf16.data[0][j]);
      const float down = WidenBf16(uint16_t(StochasticBf16(merged[j], 0)));
      const float up = WidenBf16(uint16_t(StochasticBf16(merged[j], 0xffff)));
      ASSERT_TRUE(got == down || got == up) << "parameter " << j;
      sum[j] += got;
    }
  }
  double bias = 0.0;
  size_t between = 0;
  for (size_t j = 0; j < size; ++j) {
    const float down = WidenBf16(uint16_t(StochasticBf16(merged[j], 0)));
    const float up = WidenBf16(uint16_t(StochasticBf16(merged[j], 0xffff)));
    if (down == up) continue;
    ++between;
    // In units of the value's bf16 step: one key's error has a spread of at most 1/2.
    bias += (sum[j] / keys - merged[j]) / (double(up) - down);
  }
  ASSERT_GT(between, size / 2);
  // The mean over `between` values of means over 256 keys: a spread of at most 1 / (2 sqrt(256 between)).
  EXPECT_NEAR(bias / double(between), 0.0, 5.0 / (2.0 * std::sqrt(double(keys * between))));
}

// Adasum per tensor, over trees of one to three levels, both momentum modes: each pass widens the
// replicas and combines the levels before it again, so w, w_p and the coefficients are those of the
// widened replicas, and every replica gets the result rounded with the set's noise.
TEST(Bf16Replicas, AdasumIsTheMergeOfTheWidenedReplicas) {
  for (size_t n : {size_t{1}, size_t{2}, size_t{3}, size_t{4}, size_t{5}, size_t{8}}) {
    for (const MomentumMode mode : {MomentumMode::kHeavy, MomentumMode::kNesterov}) {
      const size_t size = 2 * 8192 + 4099;
      SCOPED_TRACE(::testing::Message() << "n=" << n << (mode == MomentumMode::kHeavy ? " heavy" : " nesterov"));
      Bf16Replicas bf16 = RandomBf16Replicas(n, size, uint32_t(53 + n));
      Replicas fp32 = bf16.Widened();
      ReplicaSet bf16_set = bf16.View(), fp32_set = fp32.View();
      bf16_set.tensors = fp32_set.tensors = {0, 5000, 5001, 8192 + 3};  // a tensor across chunks, one of a value
      MergeOptions options;
      options.momentum = 0.5;
      options.momentum_mode = mode;
      GlobalModel global_bf16 = RandomGlobal(size, 59);
      GlobalModel global_fp32 = global_bf16;
      MakeAdasumMerger(options)->Merge(fp32_set, MergeInput{}, &global_fp32);
      MakeAdasumMerger(options)->Merge(bf16_set, MergeInput{}, &global_bf16);
      ASSERT_TRUE(xmlt::testing::SameBits(global_fp32.current().data(), global_bf16.current().data(), size));
      ASSERT_TRUE(xmlt::testing::SameBits(global_fp32.previous().data(), global_bf16.previous().data(), size));
      for (size_t i = 0; i < n; ++i)
        for (size_t j = 0; j < size; ++j)
          ASSERT_EQ(StochasticBf16(fp32.data[i][j], RoundingNoise(bf16.key, j)), bf16.data[i][j])
              << "replica " << i << " parameter " << j;
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
