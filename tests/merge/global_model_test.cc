// GlobalModel (merge/global_model.h): where w and w_p are newest, and the copies between the host
// and a merge that keeps them elsewhere, against a stand-in for such a merge.
#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <stdexcept>
#include <vector>

#include "merge/collective.h"
#include "merge/global_model.h"
#include "merge/global_momentum.h"
#include "merge/merger.h"
#include "merge/replica_set.h"

namespace xmlt::merge {
namespace {

// Holds its own w and w_p, as the GPUs do, and counts the copies to the host.
class HeldElsewhere final : public GlobalModelOnGpus {
 public:
  std::vector<float> current, previous;
  int fetches = 0;
  void Fetch(float* c, float* p) override {
    ++fetches;
    std::copy(current.begin(), current.end(), c);
    std::copy(previous.begin(), previous.end(), p);
  }
  bool CurrentFinite() override {
    for (const float v : current)
      if (!std::isfinite(v)) return false;
    return true;
  }
};

TEST(GlobalModel, StaleHostVectorsAreFetchedOnceWhenRead) {
  GlobalModel global{{1, 2}, {1, 2}};
  auto held = std::make_shared<HeldElsewhere>();
  held->current = {3, 4};
  held->previous = {1, 2};
  global.on_gpus = held;
  global.host_stale = true;
  global.SyncToHost();
  global.SyncToHost();
  EXPECT_EQ(held->fetches, 1);
  EXPECT_EQ(global.current, (std::vector<float>{3, 4}));
  EXPECT_FALSE(global.host_stale);
  EXPECT_EQ(global.on_gpus, held) << "a read leaves the copy elsewhere valid";
  global.HostWritten();
  EXPECT_EQ(global.on_gpus, nullptr) << "a host write makes the host vectors the model";
}

TEST(GlobalModel, FinitenessIsCheckedWhereWIsNewest) {
  GlobalModel global{{1, NAN}, {0, 0}};
  EXPECT_FALSE(global.CurrentFinite());
  auto held = std::make_shared<HeldElsewhere>();
  held->current = {1, 2};
  held->previous = {0, 0};
  global.on_gpus = held;
  global.host_stale = true;
  EXPECT_TRUE(global.CurrentFinite()) << "the stale host vectors are not read";
  EXPECT_EQ(held->fetches, 0);
}

// A host merge after a merge elsewhere fetches w and w_p first (the collectives' default momentum
// all-reduce), and merges that work only on the host refuse a stale global model.
TEST(GlobalModel, HostMergesStartFromTheNewestModel) {
  std::vector<float> a = {1, 1}, b = {3, 3};
  ReplicaSet replicas;
  replicas.size = 2;
  replicas.params = {a.data(), b.data()};
  GlobalModel global{{0, 0}, {0, 0}};
  auto held = std::make_shared<HeldElsewhere>();
  held->current = {2, 2};
  held->previous = {1, 1};
  global.on_gpus = held;
  global.host_stale = true;
  MergeOptions options;
  options.momentum = 0.5;
  MakeAverageMerger(options, MakeNaiveCollective())->Merge(replicas, {}, &global);
  EXPECT_EQ(held->fetches, 1);
  // w' = mean + 0.5 (w - w_p) = 2 + 0.5 (2 - 1) with w, w_p fetched.
  EXPECT_FLOAT_EQ(global.current[0], 2.5f);
  EXPECT_FLOAT_EQ(global.previous[0], 2.0f);
  EXPECT_EQ(global.on_gpus, nullptr);

  global.on_gpus = held;
  global.host_stale = true;
  EXPECT_THROW(MakeAdasumMerger(options)->Merge(replicas, {}, &global), std::logic_error);
  EXPECT_THROW(MakeCopyMerger()->Merge(ReplicaSet{{a.data()}, 2, {}, {}}, {}, &global), std::logic_error);
}

TEST(GlobalModel, HostCollectivesRefuseReplicasOnGpus) {
  std::vector<float> a = {1, 1};
  ReplicaSet replicas;
  replicas.size = 2;
  replicas.params = {a.data()};
  replicas.gpus = {0};
  for (const char* name : {"ring", "tree", "naive"}) {
    EXPECT_THROW(MakeCollective(name, 1)->SquaredNorms(replicas), std::invalid_argument) << name;
    EXPECT_THROW(MakeCollective(name, 1)->WeightedAllReduce(replicas, {1.0}, nullptr), std::invalid_argument) << name;
  }
  EXPECT_THROW(MakeCollective("nccl", 1), std::invalid_argument) << "nccl has no host form";
}

}  // namespace
}  // namespace xmlt::merge
