// What the scheduler tests share: generated, L2-normalized data, and engine options on the virtual
// clock with fixed costs (so that runs, their times included, are deterministic) for each --algo.
#pragma once

#include <gtest/gtest.h>

#include <string>

#include "data/row_normalization.h"
#include "data/synthetic_generator.h"
#include "scheduler/train_options.h"

namespace xmlt::testing {

using scheduler::SchedulerOptions;

inline data::GeneratedData NormalizedData(uint64_t train_rows, uint64_t test_rows, uint32_t features,
                                          uint32_t labels, uint32_t nnz_per_row, uint64_t seed) {
  data::GeneratorConfig config;
  config.train_rows = train_rows;
  config.test_rows = test_rows;
  config.features = features;
  config.labels = labels;
  config.nnz_per_row = nnz_per_row;
  config.labels_per_row = 2;
  config.seed = seed;
  data::GeneratedData generated = data::Generate(config);
  generated.train = data::NormalizeRowsL2(generated.train);
  generated.test = data::NormalizeRowsL2(generated.test);
  return generated;
}

// A short run: batches of 32 rows, mega-batches of 8, one hidden layer of 16, evaluated every 2
// mega-batches.
inline scheduler::TrainOptions ShortRunOptions(double epochs) {
  scheduler::TrainOptions options;
  options.epochs = epochs;
  options.batch = 32;
  options.mega_batch = 8;
  options.hidden = {16};
  options.eval.kind = scheduler::EvalSchedule::Kind::kEveryMegaBatches;
  options.eval.mega_batches = 2;
  return options;
}

// Adaptive SGD (dynamic dispatch, Algorithm 1, normalized merge) on the virtual clock.
inline SchedulerOptions VirtualClockScheduling(const std::string& devices, const std::string& speed) {
  SchedulerOptions scheduling;
  scheduling.devices = engine::ParseDeviceList(devices);
  scheduling.heterogeneity.speed = engine::ParseSpeeds(speed);
  scheduling.clock = SchedulerOptions::Clock::kVirtual;
  scheduling.row_cost_s = 1e-4;
  scheduling.merge_cost_s = 1e-9;
  return scheduling;
}

// The schedule and merge of an --algo other than adaptive and single, as the CLI sets them.
inline SchedulerOptions WithAlgo(SchedulerOptions scheduling, const std::string& algo) {
  using Schedule = SchedulerOptions::Schedule;
  using Merge = SchedulerOptions::Merge;
  if (algo == "adaptive") return scheduling;
  scheduling.scale_batches = false;
  if (algo == "elastic") {
    scheduling.schedule = Schedule::kStatic;
    scheduling.merge = Merge::kAverage;
  } else if (algo == "adasum") {
    scheduling.schedule = Schedule::kStatic;
    scheduling.merge = Merge::kAdasum;
  } else if (algo == "sync") {
    scheduling.schedule = Schedule::kSync;
    scheduling.merge = Merge::kGradient;
  } else if (algo == "crossbow") {
    scheduling.schedule = Schedule::kSync;
    scheduling.merge = Merge::kCrossbow;
  } else {
    ADD_FAILURE() << "no --algo " << algo;
  }
  return scheduling;
}

// A parameterized test's name from its --algo value: gtest names take no '-'.
inline std::string AlgoTestName(const ::testing::TestParamInfo<std::string>& info) {
  std::string name = info.param;
  for (char& c : name)
    if (c == '-') c = '_';
  return name;
}

}  // namespace xmlt::testing
