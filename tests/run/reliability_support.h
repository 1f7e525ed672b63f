// What the reliability tests of the training loop share (resume_test.cc, reliability_test.cc):
// a small generated dataset, each --algo on three unequal CPU workers on the virtual clock, a run
// that can be stopped on cue, and the comparison of two runs record for record and bit for bit.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "data/input_error.h"
#include "engine/device_spec.h"
#include "engine/sampled_output.h"
#include "ranks/rank_group.h"
#include "run/checkpoint_file.h"
#include "run/multi_device_run.h"
#include "run/run_progress.h"
#include "run/one_device_run.h"
#include "scheduler/memory_plan.h"
#include "tests/scheduler/scheduler_test_support.h"
#include "tests/test_support.h"

namespace xmlt::run::reliability {

inline const data::GeneratedData& Data() {
  static const data::GeneratedData data = testing::NormalizedData(3000, 300, 500, 40, 15, 5);
  return data;
}

inline scheduler::TrainOptions Options() { return testing::ShortRunOptions(2); }

inline scheduler::SchedulerOptions Scheduling(const std::string& algo) {
  scheduler::SchedulerOptions scheduling = testing::VirtualClockScheduling("cpu:3", "1,1.3,1.8");
  scheduling.merge_rule.momentum = 0.5;
  if (algo == "adaptive-nesterov-cvb") {
    scheduling.merge_rule.momentum_mode = merge::MomentumMode::kNesterov;
    scheduling.heterogeneity = engine::ParseHetero("cvb:vmach=0.5,vtask=0.2");
    return scheduling;
  }
  if (algo == "single") return scheduling;  // unused: single runs through Train (SingleDeviceScheduling)
  scheduling = testing::WithAlgo(scheduling, algo);
  if (algo == "elastic") scheduling.merge_rule.elastic_alpha = 0.3;  // EASGD: replicas keep their own state between merges
  return scheduling;
}

// SLIDE's output layer at this data's scale: 500 labels, active sets of at least 24 (the tables
// decide most of each row's labels), rehashes after 5 updates, then every 6, 7, ...: several in
// each 8-batch mega-batch (slide_resume_test.cc, cpu_sampled_run_test.cc).
inline engine::SampledOutputOptions SmallSampledOutput() {
  engine::SampledOutputOptions s;
  s.enabled = true;
  s.hash = "dwta";
  s.k = 2;
  s.l = 6;
  s.bucket_cap = 16;
  s.min_active = 24;
  s.first_rebuild = 5;
  s.rebuild_growth = 1.2;
  return s;
}

struct Outcome {
  std::vector<EvalRecord> records;
  kernels::Model<float> model;
  TrainResult result;
};

// Trains (or resumes); `stop_after` > 0 raises the stop flag once that many evaluations are done,
// `stop_at_rows` > 0 once a batch brings the rows trained to that many.
inline Outcome TrainFor(const scheduler::TrainOptions& options, const scheduler::SchedulerOptions* scheduling,
                        RunControl control, size_t stop_after = 0, uint64_t stop_at_rows = 0) {
  const data::GeneratedData& data = Data();
  kernels::ModelShape shape{data.train.num_features(), options.hidden, data.train.num_labels()};
  Outcome out;
  out.model = kernels::InitModel<float>(shape, options.seed);
  std::atomic<int> stop{0};
  control.stop_signal = &stop;
  TrainCallbacks callbacks;
  callbacks.on_resume = [&](const std::vector<EvalRecord>& earlier) { out.records = earlier; };
  callbacks.on_eval = [&](const EvalRecord& r) {
    out.records.push_back(r);
    if (stop_after > 0 && out.records.size() == stop_after) stop = 15;
  };
  callbacks.on_progress = [&](uint64_t done, uint64_t, double) {
    if (stop_at_rows > 0 && done >= stop_at_rows) stop = 2;
  };
  out.result = scheduling != nullptr
                   ? RunMultiDevice(data.train, &data.test, options, *scheduling, &out.model, callbacks, control)
                   : TrainOnOneDevice(data.train, &data.test, options, &out.model, callbacks, control);
  return out;
}

// Records equal in everything but the wall-clock fields (one device trains on the wall clock, so
// its step, busy and idle times are measured too).
inline void ExpectSameRecords(const std::vector<EvalRecord>& a, const std::vector<EvalRecord>& b, bool wall_clock_steps) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t k = 0; k < a.size(); ++k) {
    EvalRecord x = a[k], y = b[k];
    x.wall_time_s = y.wall_time_s = 0;
    x.eval_time_s = y.eval_time_s = 0;
    if (wall_clock_steps) {
      x.train_time_s = y.train_time_s = 0;
      for (DeviceRecord& d : x.devices) d.busy_s = d.idle_s = 0;
      for (DeviceRecord& d : y.devices) d.busy_s = d.idle_s = 0;
    }
    EXPECT_EQ(ToJson(x), ToJson(y)) << "evaluation " << k;
  }
}

// The same run: the same records (ExpectSameRecords) and the same model, bit for bit.
inline void ExpectSameRun(const Outcome& a, const Outcome& b, bool wall_clock_steps) {
  ExpectSameRecords(a.records, b.records, wall_clock_steps);
  ASSERT_EQ(a.model.params.size(), b.model.params.size());
  EXPECT_TRUE(testing::SameBits(a.model.params.data(), b.model.params.data(), a.model.params.size()));
}

// Every --algo, and Nesterov momentum under the gamma model, for the parameterized tests.
inline const auto kEveryAlgo = ::testing::Values("adaptive", "adaptive-nesterov-cvb", "elastic", "adasum", "sync",
                                          "crossbow", "single");

// A run in which `device` fails in mega-batch `megabatch`.
inline RunControl FailingDevice(size_t device, uint64_t megabatch) {
  RunControl control;
  scheduler::FaultInjection fail;
  fail.device = device;
  fail.megabatch = megabatch;
  control.faults = {fail};
  return control;
}

// Rows the devices trained, over every evaluation's per-device records.
inline uint64_t RowsTrained(const std::vector<EvalRecord>& records) {
  uint64_t rows = 0;
  for (const EvalRecord& r : records)
    for (const DeviceRecord& d : r.devices) rows += d.rows;
  return rows;
}

// `scheduling` on other devices: an elastic restart resumes a checkpoint there.
inline scheduler::SchedulerOptions OnDevices(scheduler::SchedulerOptions scheduling, const std::string& devices,
                                          const std::string& speed) {
  scheduling.devices = engine::ParseDeviceList(devices);
  if (!scheduling.heterogeneity.speed.empty()) scheduling.heterogeneity.speed = engine::ParseSpeeds(speed);
  return scheduling;
}

}  // namespace xmlt::run::reliability
