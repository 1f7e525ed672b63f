// The elastic force merge (CROSSBOW's synchronous model averaging, EASGD) on cases worked out by
// hand: c_j = a (z_j - x), z_j <- z_j - c_j, x <- x + sum_j c_j + gamma (x - x_prev).
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <stdexcept>
#include <vector>

#include "merge/merger.h"
#include "tests/merge/merge_test_support.h"

namespace xmlt::merge {
namespace {

using testing::Replicas;
using testing::ExpectModel;

std::unique_ptr<Merger> Elastic(double alpha, double gamma) {
  MergeOptions options;
  options.elastic_alpha = alpha;
  options.momentum = gamma;
  return MakeElasticForceMerger(options, MakeCpuPartitionedSumCollective());
}

// CROSSBOW: a = 1/2 (elastic_alpha 0 means 1/n), gamma = 0.9, x = x_prev = {1, 2}.
//  1st: z = {3, 0}, {1, 6}: c = 0.5 {2, -2} = {1, -1} and 0.5 {0, 4} = {0, 2};
//       z <- {2, 1}, {1, 4}; x <- {1, 2} + {1, 1} + 0.9 * 0 = {2, 3}; x_prev <- {1, 2}.
//  2nd: replicas trained to {4, 1}, {2, 7}: c = 0.5 {2, -2} = {1, -1} and 0.5 {0, 4} = {0, 2};
//       z <- {3, 2}, {2, 5}; x <- {2, 3} + {1, 1} + 0.9 ({2, 3} - {1, 2}) = {3.9, 4.9};
//       x_prev <- {2, 3}.
TEST(ElasticForceMerger, CrossbowOverTwoMerges) {
  auto merger = Elastic(0.0, 0.9);
  GlobalModel global{{1, 2}, {1, 2}};
  Replicas r{{{3, 0}, {1, 6}}};
  MergeOutcome out = merger->Merge(r.View(), MergeInput{}, &global);
  ASSERT_EQ(2u, out.weights.size());
  EXPECT_DOUBLE_EQ(0.5, out.weights[0]);
  EXPECT_DOUBLE_EQ(0.5, out.weights[1]);
  EXPECT_FALSE(out.perturbed);
  ExpectModel({2, 1}, r.data[0]);
  ExpectModel({1, 4}, r.data[1]);
  ExpectModel({2, 3}, global.current());
  ExpectModel({1, 2}, global.previous());

  r.data = {{4, 1}, {2, 7}};
  out = merger->Merge(r.View(), MergeInput{}, &global);
  ExpectModel({3, 2}, r.data[0]);
  ExpectModel({2, 5}, r.data[1]);
  ExpectModel({3.9f, 4.9f}, global.current());
  ExpectModel({2, 3}, global.previous());
}

// EASGD: a = 0.25, gamma = 0, x = x_prev = {0, 4}.
//  1st: z = {4, 0}, {8, 4}: c = {1, -1}, {2, 0}; z <- {3, 1}, {6, 4}; x <- {0, 4} + {3, -1}
//       = {3, 3}; x_prev <- {0, 4}.
//  2nd: z = {7, -1}, {-1, 3}: c = 0.25 {4, -4} = {1, -1}, 0.25 {-4, 0} = {-1, 0};
//       z <- {6, 0}, {0, 3}; x <- {3, 3} + {0, -1} = {3, 2} (gamma 0: x - x_prev = {3, -1} adds
//       nothing); x_prev <- {3, 3}.
TEST(ElasticForceMerger, EasgdOverTwoMerges) {
  auto merger = Elastic(0.25, 0.0);
  GlobalModel global{{0, 4}, {0, 4}};
  Replicas r{{{4, 0}, {8, 4}}};
  MergeOutcome out = merger->Merge(r.View(), MergeInput{}, &global);
  ASSERT_EQ(2u, out.weights.size());
  EXPECT_DOUBLE_EQ(0.25, out.weights[0]);
  EXPECT_DOUBLE_EQ(0.25, out.weights[1]);
  ExpectModel({3, 1}, r.data[0]);
  ExpectModel({6, 4}, r.data[1]);
  ExpectModel({3, 3}, global.current());
  ExpectModel({0, 4}, global.previous());

  r.data = {{7, -1}, {-1, 3}};
  out = merger->Merge(r.View(), MergeInput{}, &global);
  ExpectModel({6, 0}, r.data[0]);
  ExpectModel({0, 3}, r.data[1]);
  ExpectModel({3, 2}, global.current());
  ExpectModel({3, 3}, global.previous());
}

// Three replicas over several blocks, each parameter different so that block offsets matter:
// x[j] = j, x_prev[j] = j - 2, z_i[j] = j + {2, 4, -2}; a = 0.5, gamma = 0.5:
// c = {1, 2, -1}, z <- j + {1, 2, -1}, x <- j + 2 + 0.5 * 2 = j + 3, x_prev <- j.
TEST(ElasticForceMerger, EveryBlockUsesItsOwnOffset) {
  const size_t size = 10007;
  const float d[3] = {2, 4, -2}, pulled[3] = {1, 2, -1};
  GlobalModel global{std::vector<float>(size), std::vector<float>(size)};
  Replicas r{std::vector<std::vector<float>>(3, std::vector<float>(size))};
  std::vector<std::vector<float>> z_expected(3, std::vector<float>(size));
  std::vector<float> x_expected(size), prev_expected(size);
  for (size_t j = 0; j < size; ++j) {
    const float x = static_cast<float>(j);
    global.MutableCurrent()[j] = x;
    global.MutablePrevious()[j] = x - 2;
    for (int i = 0; i < 3; ++i) {
      r.data[i][j] = x + d[i];
      z_expected[i][j] = x + pulled[i];
    }
    x_expected[j] = x + 3;
    prev_expected[j] = x;
  }
  Elastic(0.5, 0.5)->Merge(r.View(), MergeInput{}, &global);
  for (int i = 0; i < 3; ++i) ExpectModel(z_expected[i], r.data[i]);
  ExpectModel(x_expected, global.current());
  ExpectModel(prev_expected, global.previous());
}

TEST(ElasticForceMerger, RejectsBadAlphaAndNesterov) {
  for (double alpha : {-0.1, 1.5, std::numeric_limits<double>::quiet_NaN()}) {
    SCOPED_TRACE(alpha);
    EXPECT_THROW(Elastic(alpha, 0.9), std::invalid_argument);
  }
  EXPECT_NO_THROW(Elastic(1.0, 0.9));
  MergeOptions nesterov;
  nesterov.momentum_mode = MomentumMode::kNesterov;
  try {
    MakeElasticForceMerger(nesterov, MakeCpuPartitionedSumCollective());
    ADD_FAILURE() << "Nesterov accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string::npos, std::string(e.what()).find("Nesterov")) << e.what();
  }
}

TEST(ElasticForceMerger, RejectsInconsistentInputsWithoutTouchingTheModel) {
  auto merger = Elastic(0.5, 0.9);
  Replicas r{{{1, 1, 1}, {2, 2, 2}}};
  GlobalModel global{{0, 0, 0}, {0, 0, 0}};
  MergeInput three;
  three.batch = {1, 1, 1};
  EXPECT_THROW(merger->Merge(r.View(), three, &global), std::invalid_argument);
  EXPECT_THROW(merger->Merge(r.View(), MergeInput{}, nullptr), std::invalid_argument);
  EXPECT_THROW(merger->Merge(ReplicaSet{}, MergeInput{}, &global), std::invalid_argument);
  GlobalModel small{{0, 0}, {0, 0}};
  EXPECT_THROW(merger->Merge(r.View(), MergeInput{}, &small), std::invalid_argument);
  ExpectModel({1, 1, 1}, r.data[0]);
  ExpectModel({2, 2, 2}, r.data[1]);
  ExpectModel({0, 0, 0}, global.current());
}

}  // namespace
}  // namespace xmlt::merge
