// Replicas that keep their weights in bf16, for the merge tests: the replicas, the same values
// widened into fp32 replicas, and the finish that makes a merge of the widened values what a merge
// of bf16 replicas computes.
#pragma once

#include <cstdint>
#include <vector>

#include "kernels/cpu/stochastic_rounding.h"
#include "merge/global_momentum.h"
#include "merge/replica_set.h"
#include "tests/merge/merge_test_support.h"

namespace xmlt::merge::testing {

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
      for (size_t j = 0; j < d.size(); ++j) r.data.back()[j] = kernels::cpu::WidenBf16(d[j]);
    }
    return r;
  }
};

inline Bf16Replicas RandomBf16Replicas(size_t n, size_t size, uint32_t seed) {
  const Replicas r = RandomReplicas(n, size, seed);
  Bf16Replicas b;
  b.key = seed * 2654435761u;
  for (const auto& d : r.data) {
    b.data.emplace_back(d.size());
    for (size_t j = 0; j < d.size(); ++j) b.data.back()[j] = kernels::cpu::NearestBf16(d[j]);
  }
  return b;
}

// The finish a merge of bf16 replicas runs, for fp32 replicas of their widened values: the sum is
// moved by start_weight (start - start rounded to nearest), the start the replicas really began
// from, then the momentum rule runs (merge/global_momentum.h).
inline FinishBlock MovedFinish(GlobalModel* global, double momentum, MomentumMode mode, double start_weight) {
  const FinishBlock rule = GlobalMomentumFinish(global, momentum, mode);
  const float* w = global->current().data();
  const float* wp = global->previous().data();
  const float gamma = float(momentum), moved = float(start_weight);
  return [=](size_t begin, size_t end, float* values) {
    for (size_t j = begin; j < end; ++j) {
      const float start = mode == MomentumMode::kNesterov ? w[j] + gamma * (w[j] - wp[j]) : w[j];
      values[j - begin] += moved * (start - kernels::cpu::WidenBf16(kernels::cpu::NearestBf16(start)));
    }
    rule(begin, end, values);
  };
}

}  // namespace xmlt::merge::testing
