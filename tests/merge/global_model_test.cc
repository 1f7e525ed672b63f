// GlobalModel (merge/global_model.h): where w and w_p are newest, and the copies between the host
// and a merge that keeps them elsewhere, against a stand-in for such a merge.
#include <gtest/gtest.h>

#include <algorithm>
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

// Holds its own w and w_p, as the GPUs do, and counts the copies to the host; `lost` makes a
// fetch fail halfway, as a lost GPU does.
class HeldElsewhere final : public GlobalModelOnGpus {
 public:
  std::vector<float> current, previous;
  int fetches = 0;
  bool lost = false;
  void Fetch(float* c, float* p) override {
    ++fetches;
    std::copy(current.begin(), current.end(), c);
    if (lost) throw std::runtime_error("a GPU was lost");
    std::copy(previous.begin(), previous.end(), p);
  }
  bool CurrentFinite() override {
    for (const float v : current)
      if (!std::isfinite(v)) return false;
    return true;
  }
};

// A global model whose w and w_p are newer in a stand-in for a merge on the GPUs: {3, 4}, {1, 2}.
std::shared_ptr<HeldElsewhere> KeepElsewhere(GlobalModel* global) {
  auto held = std::make_shared<HeldElsewhere>();
  held->current = {3, 4};
  held->previous = {1, 2};
  global->KeptOnGpus(held);
  return held;
}

TEST(GlobalModel, StaleHostVectorsAreFetchedOnceWhenRead) {
  GlobalModel global{{1, 2}, {1, 2}};
  const auto held = KeepElsewhere(&global);
  EXPECT_EQ(global.size(), 2u) << "sizes need no fetch";
  EXPECT_EQ(held->fetches, 0);
  EXPECT_EQ(global.current(), (std::vector<float>{3, 4}));
  EXPECT_EQ(global.previous(), (std::vector<float>{1, 2}));
  global.SyncToHost();
  EXPECT_EQ(held->fetches, 1);
  EXPECT_FALSE(global.newer_on_gpus());
  EXPECT_EQ(global.gpu_holder(), held.get()) << "a read leaves the copy elsewhere valid";
  global.MutableCurrent()[0] = 5;
  EXPECT_EQ(global.gpu_holder(), nullptr) << "a host write makes the host vectors the model";
  EXPECT_EQ(global.current(), (std::vector<float>{5, 4}));
}

TEST(GlobalModel, AHostWriteFetchesFirstUnlessItReplacesTheModel) {
  GlobalModel written{{0, 0}, {0, 0}};
  const auto held = KeepElsewhere(&written);
  written.MutablePrevious()[1] = 7;
  EXPECT_EQ(held->fetches, 1);
  EXPECT_EQ(written.current(), (std::vector<float>{3, 4})) << "the rest of the model is the newest";
  EXPECT_EQ(written.previous(), (std::vector<float>{1, 7}));
  EXPECT_EQ(written.gpu_holder(), nullptr);

  GlobalModel rolled_back{{0, 0}, {0, 0}};
  const auto gone = KeepElsewhere(&rolled_back);
  rolled_back.Assign({8, 9}, {8, 9});
  EXPECT_EQ(gone->fetches, 0) << "a model replaced whole is not fetched";
  EXPECT_FALSE(rolled_back.newer_on_gpus());
  EXPECT_EQ(rolled_back.gpu_holder(), nullptr);
  EXPECT_EQ(rolled_back.current(), (std::vector<float>{8, 9}));
}

// A merger replaced on the GPUs gives w and w_p back to the host; a lost GPU leaves the host's
// older copy as it was, whole.
TEST(GlobalModel, TakenBackFromTheGpusOrTheHostCopyStandsIn) {
  GlobalModel global{{1, 2}, {1, 2}};
  const auto held = KeepElsewhere(&global);
  EXPECT_TRUE(global.TakeBackFromGpus());
  EXPECT_EQ(global.gpu_holder(), nullptr);
  EXPECT_EQ(global.current(), (std::vector<float>{3, 4}));

  GlobalModel cut{{1, 2}, {0, 1}};
  KeepElsewhere(&cut)->lost = true;
  EXPECT_FALSE(cut.TakeBackFromGpus());
  EXPECT_EQ(cut.gpu_holder(), nullptr);
  EXPECT_EQ(cut.current(), (std::vector<float>{1, 2})) << "a cut fetch leaves the host copy whole";
  EXPECT_EQ(cut.previous(), (std::vector<float>{0, 1}));

  GlobalModel fallen_back{{1, 2}, {0, 1}};
  const auto lost = KeepElsewhere(&fallen_back);
  fallen_back.FallBackToHostCopy();
  EXPECT_EQ(fallen_back.current(), (std::vector<float>{1, 2}));
  EXPECT_EQ(lost->fetches, 0);
  EXPECT_EQ(fallen_back.gpu_holder(), nullptr);
}

// An evaluation borrows w's vector and gives it back; the GPUs' copy stays the model's.
TEST(GlobalModel, ALentCurrentComesBackWithoutChangingWhereItIsValid) {
  GlobalModel global{{1, 2}, {1, 2}};
  const auto held = KeepElsewhere(&global);
  std::vector<float> borrower;
  global.SwapCurrent(&borrower);
  EXPECT_EQ(borrower, (std::vector<float>{3, 4})) << "the newest w is lent";
  global.SwapCurrent(&borrower);
  EXPECT_TRUE(borrower.empty());
  EXPECT_EQ(global.current(), (std::vector<float>{3, 4}));
  EXPECT_EQ(global.gpu_holder(), held.get());
  EXPECT_EQ(held->fetches, 1);
}

TEST(GlobalModel, FinitenessIsCheckedWhereWIsNewest) {
  GlobalModel global{{1, NAN}, {0, 0}};
  EXPECT_FALSE(global.CurrentFinite());
  auto held = std::make_shared<HeldElsewhere>();
  held->current = {1, 2};
  held->previous = {0, 0};
  global.KeptOnGpus(held);
  EXPECT_TRUE(global.CurrentFinite()) << "the stale host vectors are not read";
  EXPECT_EQ(held->fetches, 0);
}

// A host merge after a merge elsewhere fetches w and w_p first (the collectives' default momentum
// all-reduce), and merges that work only on the host refuse a stale global model.
TEST(GlobalModel, HostMergesStartFromTheNewestModel) {
  std::vector<float> a = {1, 1}, b = {3, 3};
  ReplicaSet replicas;
  replicas.size = 2;
  replicas.members = {{a.data()}, {b.data()}};
  GlobalModel global{{0, 0}, {0, 0}};
  auto held = std::make_shared<HeldElsewhere>();
  held->current = {2, 2};
  held->previous = {1, 1};
  global.KeptOnGpus(held);
  MergeOptions options;
  options.momentum = 0.5;
  MakeAverageMerger(options, MakeNaiveCollective())->Merge(replicas, {}, &global);
  EXPECT_EQ(held->fetches, 1);
  // w' = mean + 0.5 (w - w_p) = 2 + 0.5 (2 - 1) with w, w_p fetched.
  EXPECT_FLOAT_EQ(global.current()[0], 2.5f);
  EXPECT_FLOAT_EQ(global.previous()[0], 2.0f);
  EXPECT_EQ(global.gpu_holder(), nullptr);

  global.KeptOnGpus(held);
  EXPECT_THROW(MakeAdasumMerger(options)->Merge(replicas, {}, &global), std::logic_error);
  EXPECT_THROW(MakeCopyMerger()->Merge(ReplicaSet{{{a.data()}}, 2, {}}, {}, &global), std::logic_error);
}

TEST(GlobalModel, HostCollectivesRefuseReplicasOnGpus) {
  std::vector<float> a = {1, 1};
  ReplicaSet replicas;
  replicas.size = 2;
  replicas.members = {{a.data(), 0}};
  for (const char* name : {"ring", "tree", "naive"}) {
    EXPECT_THROW(MakeCollective(name, 1)->SquaredNorms(replicas), std::invalid_argument) << name;
    EXPECT_THROW(MakeCollective(name, 1)->WeightedAllReduce(replicas, {1.0}, nullptr), std::invalid_argument) << name;
  }
  EXPECT_THROW(MakeCollective("nccl", 1), std::invalid_argument) << "nccl has no host form";
}

}  // namespace
}  // namespace xmlt::merge
