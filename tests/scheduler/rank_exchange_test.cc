// SendReplicasToRoot, which feeds a checkpoint across ranks: every replica and its local momentum
// reach the writing rank from their owner, and no other rank reads or makes a mirror. And
// ShareBatchResults: every rank learns every batch's result, a lost GPU context included.
#include "scheduler/rank_exchange.h"

#include <gtest/gtest.h>

#include <exception>
#include <stdexcept>
#include <thread>

#include "engine/device_spec.h"
#include "engine/worker.h"
#include "ranks/rank_group.h"

namespace xmlt::scheduler {
namespace {

constexpr size_t kParams = 1001;  // not divisible by the 3 ranks

// A replica that records whether anything asked for its parameters (a real mirror would then
// allocate them).
class Replica : public engine::Device {
 public:
  explicit Replica(size_t index) : spec_(engine::ParseDeviceList("cpu:4").at(index)) {}
  const engine::DeviceSpec& spec() const override { return spec_; }
  kernels::cpu::LossResult TrainBatch(const data::Dataset&, const uint64_t*, size_t, float) override {
    throw std::logic_error("not trained here");
  }
  float* HostParams() override {
    asked = true;
    params.resize(kParams);
    return params.data();
  }
  size_t NumParams() const override { return kParams; }
  size_t OptimizerStateSize() const override { return momentum.size(); }
  void StreamOptimizerState(const OptimizerStateSink& sink) override { sink(momentum.data(), momentum.size()); }
  void RestoreOptimizerState(const void* values, size_t count) override {
    momentum.assign(static_cast<const float*>(values), static_cast<const float*>(values) + count);
  }

  engine::DeviceSpec spec_;
  std::vector<float> params, momentum;
  bool asked = false;
};

TEST(SendReplicasToRoot, BringsEveryReplicaAndItsMomentumToTheRootOnly) {
  // Devices 0-3 on ranks 0, 1, 2, 1; device 3 keeps no momentum; device 2 was dropped (not alive).
  const std::vector<int> device_rank{0, 1, 2, 1};
  const std::vector<size_t> alive{0, 1, 3};
  std::vector<std::unique_ptr<ranks::RankGroup>> groups = ranks::MakeThreadGroups(3, std::chrono::seconds(30));
  std::vector<std::vector<Replica>> replicas(3);
  std::vector<std::exception_ptr> errors(3);
  std::vector<std::thread> threads;
  for (int r = 0; r < 3; ++r) {
    for (size_t k = 0; k < 4; ++k) {
      replicas[r].emplace_back(k);
      if (device_rank[k] != r) continue;
      replicas[r][k].params.assign(kParams, float(k + 1));
      if (k != 3) replicas[r][k].momentum.assign(kParams, float(k + 10));
    }
    threads.emplace_back([&, r] {
      try {
        std::vector<engine::Device*> devices;
        for (size_t k : alive) devices.push_back(&replicas[r][k]);
        SendReplicasToRoot(*groups[r], 0, device_rank, alive, devices);
      } catch (...) {
        errors[r] = std::current_exception();
      }
    });
  }
  for (std::thread& t : threads) t.join();
  for (const std::exception_ptr& e : errors)
    if (e) std::rethrow_exception(e);

  for (size_t k : {size_t{1}, size_t{3}}) {
    EXPECT_EQ(replicas[0][k].params, std::vector<float>(kParams, float(k + 1))) << "device " << k << " on rank 0";
    EXPECT_EQ(replicas[0][k].momentum, k == 3 ? std::vector<float>{} : std::vector<float>(kParams, float(k + 10)))
        << "device " << k << "'s momentum on rank 0";
  }
  EXPECT_FALSE(replicas[0][2].asked) << "a dropped device is not gathered";
  EXPECT_FALSE(replicas[0][0].asked) << "rank 0's own device stays as it is";
  // The bystanders: rank 2 holds no mirror of devices 1 and 3, rank 1 none of device 0.
  for (size_t k : {size_t{0}, size_t{1}, size_t{3}}) EXPECT_FALSE(replicas[2][k].asked) << "rank 2, device " << k;
  EXPECT_FALSE(replicas[1][0].asked);
  // The owners still hold their own.
  EXPECT_EQ(replicas[1][1].params, std::vector<float>(kParams, 2.0f));
  EXPECT_EQ(replicas[1][3].params, std::vector<float>(kParams, 4.0f));
}

TEST(ShareBatchResults, EveryRankGetsEveryResultWithItsErrorAndLostContext) {
  // Batches 0..3 on devices 0, 1, 2, 1 of ranks 0, 1, 2, 1: device 1 (rank 1) lost its context
  // in batch 3, device 2 (rank 2) failed plainly.
  const std::vector<int> device_rank{0, 1, 2};
  const std::vector<size_t> plan_devices{0, 1, 2, 1};
  std::vector<std::unique_ptr<ranks::RankGroup>> groups = ranks::MakeThreadGroups(3, std::chrono::seconds(30));
  std::vector<std::vector<engine::BatchResult>> results(3, std::vector<engine::BatchResult>(4));
  std::vector<std::exception_ptr> errors(3);
  std::vector<std::thread> threads;
  for (int r = 0; r < 3; ++r) {
    for (size_t k = 0; k < 4; ++k) {
      if (device_rank[plan_devices[k]] != r) continue;
      engine::BatchResult& mine = results[r][k];
      mine.device = plan_devices[k];
      mine.count = 10 + k;
      mine.loss_sum = 0.5 * double(k);
      mine.labeled_rows = uint32_t(9 + k);
      if (k == 2) mine.error = std::make_exception_ptr(std::runtime_error("cpu:2 broke"));
      if (k == 3) {
        mine.error = std::make_exception_ptr(std::runtime_error("cuda:0.1 lost its context"));
        mine.context_lost = true;
      }
    }
    threads.emplace_back([&, r] {
      try {
        ShareBatchResults(*groups[r], device_rank, plan_devices, &results[r]);
      } catch (...) {
        errors[r] = std::current_exception();
      }
    });
  }
  for (std::thread& t : threads) t.join();
  for (const std::exception_ptr& e : errors)
    if (e) std::rethrow_exception(e);
  auto message = [](const std::exception_ptr& e) {
    try {
      std::rethrow_exception(e);
    } catch (const std::exception& x) {
      return std::string(x.what());
    }
  };
  for (int r = 0; r < 3; ++r) {
    for (size_t k = 0; k < 4; ++k) {
      const engine::BatchResult& got = results[r][k];
      EXPECT_EQ(got.device, plan_devices[k]) << "rank " << r << ", batch " << k;
      EXPECT_EQ(got.count, 10 + k);
      EXPECT_EQ(got.loss_sum, 0.5 * double(k));
      EXPECT_EQ(got.labeled_rows, 9 + k);
      EXPECT_EQ(got.context_lost, k == 3) << "rank " << r << ", batch " << k;
      EXPECT_EQ(bool(got.error), k >= 2) << "rank " << r << ", batch " << k;
    }
    EXPECT_EQ(message(results[r][2].error), "cpu:2 broke");
    EXPECT_EQ(message(results[r][3].error), "cuda:0.1 lost its context");
  }
}

}  // namespace
}  // namespace xmlt::scheduler
