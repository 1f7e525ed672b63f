// The linear ranker's epoch (kernels/linear_ranker_epoch.h) against its floor: the same epoch's
// weight updates alone, at pair ids found beforehand. The floor is what every epoch must do (read
// and write each matched pair's weight and Adagrad square once); what the epoch costs above it is
// finding the pairs, scoring and the hinge. Each epoch runs with and without dense lookups, on one
// shard and on one per thread.
//
// Data: generated with EURLEX57K's shape (45,000 rows, 80,327 features, 4,271 labels; the
// generator's power-law frequencies), 5.3 labels and 120 features a row; each row's shortlist is
// 50 labels drawn by frequency (a label as often as it occurs in the rows), as an MLP's top 50 leans
// to the frequent labels.
//
// StageAtTable1Shape: the ranker's stage (run/ranker_stage.h) at the full Table 1 shapes,
// generated: the pair count against run::kMaxRankerPairs, then where the ranker fits, its build,
// one epoch, and the MLP's top 50 for 2,000 rows at the defaults' width there (128), from which
// the counters project the stage's whole cost. One iteration; it generates the data first.
// Run: build/benchmarks/bench_ranker [--benchmark_filter=...]
#include <benchmark/benchmark.h>
#include <tbb/info.h>

#include <chrono>
#include <cmath>
#include <string>
#include <cstdint>
#include <random>
#include <vector>

#include "data/row_subset.h"
#include "data/synthetic_generator.h"
#include "engine/evaluator.h"
#include "kernels/cpu/sparse_mlp.h"
#include "kernels/linear_ranker_epoch.h"
#include "kernels/shortlist_ranker.h"
#include "run/ranker_stage.h"

namespace {

using namespace xmlt;
using namespace xmlt::kernels;

constexpr uint32_t kShortlist = 50;

struct RankerData {
  data::Dataset train;
  std::vector<uint32_t> shortlists;
  LinearRanker fresh;
};

const RankerData& Data() {
  static const RankerData d = [] {
    data::GeneratorConfig config;
    config.train_rows = 45000;
    config.test_rows = 1;
    config.features = 80327;
    config.labels = 4271;
    config.nnz_per_row = 120;
    config.labels_per_row = 5.3;
    RankerData out;
    out.train = data::Generate(config).train;
    std::mt19937_64 rng(1);
    const data::CsrMatrix& labels = out.train.labels;
    out.shortlists.resize(out.train.num_rows() * kShortlist);
    for (uint32_t& label : out.shortlists) label = labels.col_idx[rng() % labels.nnz()];
    out.fresh = BuildLinearRanker(out.train, UINT64_MAX);
    return out;
  }();
  return d;
}

// Args: dense lookups (0 or 1), shards (0: one per thread).
void Epoch(benchmark::State& state) {
  const RankerData& d = Data();
  LinearRanker ranker = d.fresh;
  // As much memory for the dense rows as the pairs themselves hold (a label, weight and square).
  const uint64_t dense = state.range(0) ? AddDenseLookups(&ranker, ranker.num_pairs() * 12) : 0;
  const uint32_t shards = state.range(1) ? uint32_t(state.range(1)) : uint32_t(tbb::info::default_concurrency());
  for (auto _ : state) {
    const double loss = RankerTrainEpoch(&ranker, d.train.features, d.train.labels, d.shortlists.data(), kShortlist,
                                         0.1f, shards);
    benchmark::DoNotOptimize(loss);
  }
  state.counters["pairs"] = double(ranker.num_pairs());
  state.counters["dense_features"] = double(dense);
  state.counters["shards"] = shards;
  state.counters["rows_per_s"] = benchmark::Counter(double(d.train.num_rows()), benchmark::Counter::kIsIterationInvariantRate);
}

// The floor: the Adagrad updates of one epoch's matched pairs (every row's pairs with its
// candidates), the pair ids found beforehand and one gradient for all, on one thread.
void UpdatesOnly(benchmark::State& state) {
  const RankerData& d = Data();
  LinearRanker ranker = d.fresh;
  std::vector<uint64_t> pairs;
  RankerScratch scratch;
  for (uint64_t row = 0; row < d.train.num_rows(); ++row) {
    const RankerCandidates c = CandidatesOf(d.train.labels, row, d.shortlists.data() + row * kShortlist, kShortlist,
                                            ranker.num_labels);
    MatchRankerPairs(ranker, d.train.features, row, c.labels.data(), c.labels.size(), &scratch);
    for (const RankerMatch& m : scratch.matches) pairs.push_back(m.pair);
  }
  const float eps = float(cpu::kAdagradEpsilon);
  for (auto _ : state) {
    for (const uint64_t p : pairs) {
      const float g = 0.01f;
      ranker.square[p] += g * g;
      ranker.weight[p] -= 0.1f * g / (std::sqrt(ranker.square[p]) + eps);
    }
    benchmark::DoNotOptimize(ranker.weight.data());
  }
  state.counters["matches"] = double(pairs.size());
  state.counters["rows_per_s"] = benchmark::Counter(double(d.train.num_rows()), benchmark::Counter::kIsIterationInvariantRate);
}

double SecondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

void StageAtTable1Shape(benchmark::State& state, const std::string& preset) {
  using Clock = std::chrono::steady_clock;
  data::GeneratorConfig config = data::PresetConfig(preset, 1.0);
  config.test_rows = 1;
  const data::Dataset train = data::Generate(config).train;
  for (auto _ : state) {
    Clock::time_point start = Clock::now();
    const uint64_t pairs = run::CountRankerPairs(train, run::kMaxRankerPairs);
    state.counters["count_s"] = SecondsSince(start);
    state.counters["pairs_counted"] = double(pairs);  // the bound rows x features x labels where it fits
    state.counters["fits"] = pairs <= run::kMaxRankerPairs ? 1 : 0;
    if (pairs > run::kMaxRankerPairs) continue;  // no ranker: the run trains the MLP alone
    start = Clock::now();
    LinearRanker ranker = BuildLinearRanker(train, run::kMaxRankerPairs);
    state.counters["pairs"] = double(ranker.num_pairs());
    state.counters["dense_features"] = double(AddDenseLookups(&ranker, kRankerDenseLookupBytes));
    state.counters["build_s"] = SecondsSince(start);
    state.counters["ranker_mib"] =
        double(ranker.num_pairs() * 12 + ranker.feature_ptr.size() * 8 + ranker.dense_offset.size() * 4) / (1 << 20);
    std::mt19937_64 rng(1);
    std::vector<uint32_t> shortlists(train.num_rows() * kShortlist);
    for (uint32_t& label : shortlists) label = train.labels.col_idx[rng() % train.labels.nnz()];
    start = Clock::now();
    benchmark::DoNotOptimize(RankerTrainEpoch(&ranker, train.features, train.labels, shortlists.data(), kShortlist,
                                              run::kRankerLearningRate, uint32_t(tbb::info::default_concurrency())));
    state.counters["epoch_s"] = SecondsSince(start);
    // The MLP's top 50 of a sample of rows, at the defaults' width at these shapes.
    ModelShape shape;
    shape.num_features = train.num_features();
    shape.num_labels = train.num_labels();
    shape.hidden = {128};
    const Model<float> mlp = InitModel<float>(shape, 1);
    std::vector<uint64_t> sample(2000);
    for (uint64_t& row : sample) row = rng() % train.num_rows();
    const data::Dataset some = data::SelectRows(train, sample);
    start = Clock::now();
    benchmark::DoNotOptimize(engine::TopLabels(mlp, some, kShortlist).data());
    const double per_row = SecondsSince(start) / double(sample.size());
    state.counters["shortlist_s"] = per_row * double(train.num_rows());  // projected to every row
    state.counters["stage_s"] = state.counters["count_s"] + state.counters["build_s"] +
                                double(run::RankerOptions().epochs) * state.counters["epoch_s"] +
                                state.counters["shortlist_s"];
  }
}

BENCHMARK_CAPTURE(StageAtTable1Shape, amazon670k, std::string("amazon670k"))
    ->Unit(benchmark::kSecond)->UseRealTime()->Iterations(1);
BENCHMARK_CAPTURE(StageAtTable1Shape, delicious200k, std::string("delicious200k"))
    ->Unit(benchmark::kSecond)->UseRealTime()->Iterations(1);

BENCHMARK(Epoch)->ArgNames({"dense", "shards"})->Args({0, 1})->Args({1, 1})->Args({0, 0})->Args({1, 0})
    ->Unit(benchmark::kMillisecond)->UseRealTime()->Iterations(2);
BENCHMARK(UpdatesOnly)->Unit(benchmark::kMillisecond)->Iterations(2);

}  // namespace
