// The dispatch plan, driven batch by batch without threads: who gets the next batch under dynamic
// and static dispatch, the sync split, and a plan cut and resumed from its saved state.
#include "scheduler/dispatch_planner.h"

#include <gtest/gtest.h>

#include <vector>

namespace xmlt::scheduler {
namespace {

using Schedule = SchedulerOptions::Schedule;

DispatchPlanner Planner(Schedule schedule, std::vector<double> speed, uint32_t mega_batch = 100) {
  engine::HeterogeneitySpec spec;
  spec.speed = speed;
  return DispatchPlanner(schedule, mega_batch, engine::SlowdownModel(spec, speed.size(), 7));
}

// Deals `batches` batches of `rows` among `alive`; the devices in the order they got them.
std::vector<size_t> Deal(DispatchPlanner* planner, const std::vector<size_t>& alive, size_t batches,
                         uint64_t rows = 32) {
  std::vector<size_t> order;
  for (size_t b = 0; b < batches; ++b) {
    const std::optional<size_t> device = planner->NextDevice(alive);
    if (!device) break;
    planner->Dealt(*device, rows, planner->DrawSlowdown(*device));
    order.push_back(*device);
  }
  return order;
}

TEST(DispatchPlanner, DynamicGivesTheNextBatchToTheEarliestClockTiesToTheLowerIndex) {
  DispatchPlanner planner = Planner(Schedule::kDynamic, {1, 2});
  // Clocks 0,0 -> 0; 32,0 -> 1; 32,64 -> 0; 64,64 -> 0 (tie); 96,64 -> 1; ...
  EXPECT_EQ(Deal(&planner, {0, 1}, 6), (std::vector<size_t>{0, 1, 0, 0, 1, 0}));
}

TEST(DispatchPlanner, DynamicGivesATwiceSlowerDeviceHalfTheBatches) {
  DispatchPlanner planner = Planner(Schedule::kDynamic, {1, 2, 1});
  const std::vector<size_t> order = Deal(&planner, {0, 1, 2}, 500);
  std::vector<size_t> count(3, 0);
  for (size_t d : order) ++count[d];
  EXPECT_NEAR(double(count[1]) / double(count[0]), 0.5, 0.02);
  EXPECT_NEAR(double(count[2]) / double(count[0]), 1.0, 0.02);
}

TEST(DispatchPlanner, DynamicSkipsDroppedDevices) {
  DispatchPlanner planner = Planner(Schedule::kDynamic, {1, 1, 1});
  for (size_t d : Deal(&planner, {0, 2}, 20)) EXPECT_NE(d, 1u);
}

TEST(DispatchPlanner, StaticDealsRoundRobinCeilMOverNEachThenStops) {
  DispatchPlanner planner = Planner(Schedule::kStatic, {1, 3, 1}, 7);  // speeds do not matter
  EXPECT_EQ(Deal(&planner, {0, 1, 2}, 100), (std::vector<size_t>{0, 1, 2, 0, 1, 2, 0, 1, 2}));
  planner.BeginMegaBatch();
  EXPECT_EQ(Deal(&planner, {0, 2}, 100), (std::vector<size_t>{0, 2, 0, 2, 0, 2, 0, 2}));
}

TEST(DispatchPlanner, SyncRoundsSplitTheRowsEvenlyTheFirstOnesARowMore) {
  using Shares = std::vector<std::pair<size_t, uint64_t>>;
  EXPECT_EQ(DispatchPlanner::SplitRound(10, {0, 1, 2}), (Shares{{0, 4}, {1, 3}, {2, 3}}));
  EXPECT_EQ(DispatchPlanner::SplitRound(2, {0, 2, 3}), (Shares{{0, 1}, {2, 1}}));
  EXPECT_TRUE(DispatchPlanner::SplitRound(0, {0, 1}).empty());
}

TEST(DispatchPlanner, WorkAddsRowsTimesSlowdownUntilCleared) {
  DispatchPlanner planner = Planner(Schedule::kDynamic, {1, 2});
  planner.AddWork(1, 32, 2.0);
  planner.AddWork(1, 16, 2.0);
  EXPECT_DOUBLE_EQ(planner.Work(1), 96.0);
  EXPECT_DOUBLE_EQ(planner.Work(0), 0.0);
  planner.ClearWork();
  EXPECT_DOUBLE_EQ(planner.Work(1), 0.0);
}

// A mega-batch cut after 9 batches and planned on from the saved state deals what an uncut one
// deals, slowdown draws included (CVB: every draw differs).
TEST(DispatchPlanner, APlanCutAndRestoredGoesOnAsIfUncut) {
  engine::HeterogeneitySpec cvb = engine::ParseHetero("cvb:vmach=0.5,vtask=0.3");
  auto make = [&] { return DispatchPlanner(Schedule::kDynamic, 100, engine::SlowdownModel(cvb, 3, 11)); };
  struct Plan {
    std::vector<size_t> order;
    std::vector<double> draws;
  };
  auto deal = [](DispatchPlanner* planner, int batches, Plan* plan) {
    for (int b = 0; b < batches; ++b) {
      const size_t d = *planner->NextDevice({0, 1, 2});
      plan->draws.push_back(planner->DrawSlowdown(d));
      planner->Dealt(d, 32, plan->draws.back());
      plan->order.push_back(d);
    }
  };
  DispatchPlanner whole = make();
  Plan uncut;
  deal(&whole, 30, &uncut);

  DispatchPlanner first = make();
  Plan cut;
  deal(&first, 9, &cut);
  nlohmann::json saved;
  first.Save(&saved);
  DispatchPlanner resumed = make();
  resumed.Restore(nlohmann::json::parse(saved.dump()));  // through text, as a checkpoint holds it
  deal(&resumed, 21, &cut);
  EXPECT_EQ(cut.order, uncut.order);
  EXPECT_EQ(cut.draws, uncut.draws);
}

TEST(DispatchPlanner, RestoreRefusesStateOfAnotherShape) {
  DispatchPlanner three = Planner(Schedule::kDynamic, {1, 1, 1});
  nlohmann::json saved;
  three.Save(&saved);
  saved["plan_clock"] = std::vector<double>{0, 0};
  EXPECT_THROW(three.Restore(saved), std::invalid_argument);
  three.Save(&saved);
  saved["plan_units"] = std::vector<double>{0, -1, 0};
  EXPECT_THROW(three.Restore(saved), std::invalid_argument);
}

}  // namespace
}  // namespace xmlt::scheduler
