// Helpers shared by the merge tests: replicas that own their storage, random replicas, a model
// comparison with a tolerance relative to the expected values, and the replicas' squared norms.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "merge/replica_set.h"

namespace xmlt::merge::testing {

// Owns the replicas' storage and hands out the pointer view the merges and collectives take.
struct Replicas {
  std::vector<std::vector<float>> data;
  std::vector<size_t> tensors;  // empty: one tensor
  ReplicaSet View() {
    ReplicaSet set;
    set.size = data.empty() ? 0 : data[0].size();
    for (auto& d : data) set.members.push_back({d.data()});
    set.tensors = tensors;
    return set;
  }
};

// n replicas of `size` parameters drawn uniformly from [-2, 2).
inline Replicas RandomReplicas(size_t n, size_t size, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-2.0f, 2.0f);
  Replicas r;
  r.data.assign(n, std::vector<float>(size));
  for (auto& d : r.data)
    for (auto& x : d) x = dist(rng);
  return r;
}

inline void ExpectModel(const std::vector<float>& expected, const std::vector<float>& got) {
  ASSERT_EQ(expected.size(), got.size());
  for (size_t j = 0; j < got.size(); ++j)
    EXPECT_NEAR(expected[j], got[j], 1e-6 * (1.0 + std::abs(expected[j]))) << "parameter " << j;
}

// Each replica's squared norm, against a sum in double precision of its values.
inline void ExpectSquaredNorms(const Replicas& r, const std::vector<double>& norms) {
  ASSERT_EQ(r.data.size(), norms.size());
  for (size_t i = 0; i < norms.size(); ++i) {
    double ref = 0.0;
    for (float x : r.data[i]) ref += double(x) * x;
    EXPECT_NEAR(ref, norms[i], 1e-12 * ref) << "replica " << i;
  }
}

}  // namespace xmlt::merge::testing
