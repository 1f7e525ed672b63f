// The linear ranker's solver (kernels/ranker/linear_ranker_dual.h) against its floor: the same number of
// sparse dot products and updates over the same rows, against one dense weight vector per thread
// (no pair lookups). The floor is what every pass must do (read each candidate row's features and
// weights twice); what the solver costs above it is finding each label's pairs. The solver runs
// with and without dense lookups, on one thread and on every thread.
//
// Data: generated with EURLEX57K's shape (45,000 rows, 80,327 features, 4,271 labels; the
// generator's power-law frequencies), 5.3 labels and 120 features a row; each row's shortlist is
// 50 labels drawn by frequency (a label as often as it occurs in the rows), as an MLP's top 50 leans
// to the frequent labels.
//
// StageAtTable1Shape: the ranker's stage (run/ranker_stage.h) at the full Table 1 shapes,
// generated: the pair count against run::kMaxRankerPairs, then where the ranker fits, its build,
// its solve on those shortlists, and the MLP's top 50 for 2,048 rows at the defaults' width there
// (128) and in the defaults' output math on CPU devices (bf16 where the CPU has it), from which the
// counters project the stage's whole cost; beside it, in the same run, eight training steps of the
// defaults (batch 256, dropout, Adagrad on the first layer, the same math), projected to the
// defaults' 20 epochs: `stage_over_training` is the stage's share of a default run. One iteration;
// it generates the data first.
//
// Shortlists: the MLP's top 50 of 2,048 rows at Amazon-670K's shape, through the fused top-k
// (kernels/cpu/output_top_k.h) in fp32 and bf16, and through the whole logits and a separate top-k
// as the stage did before (path 0), with the output product's GFLOP/s: the products are the floor.
// Run: build/benchmarks/bench_ranker [--benchmark_filter=...]
#include <benchmark/benchmark.h>
#include <tbb/info.h>
#include <tbb/task_arena.h>

#include <sys/resource.h>

#include <chrono>
#include <string>
#include <cstdint>
#include <random>
#include <vector>

#include "data/row_subset.h"
#include "data/synthetic_generator.h"
#include "engine/cpu_replica.h"
#include "engine/evaluator.h"
#include "kernels/cpu/bf16_gemm.h"
#include "kernels/cpu/sparse_mlp.h"
#include "kernels/cpu/top_k.h"
#include "kernels/ranker/linear_ranker_dual.h"
#include "kernels/ranker/shortlist_ranker.h"
#include "run/ranker_plan.h"
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

// Each candidate's row features, summed over the rows of every label: one pass's visits.
uint64_t PassVisits(const RankerData& d) {
  uint64_t visits = 0;
  for (uint64_t row = 0; row < d.train.num_rows(); ++row)
    visits += d.train.features.RowSize(row) *
              CandidatesOf(d.train.labels, row, d.shortlists.data() + row * kShortlist, kShortlist, d.fresh.num_labels)
                  .labels.size();
  return visits;
}

// Args: dense lookups (0 or 1), threads (0: every thread).
void Solve(benchmark::State& state) {
  const RankerData& d = Data();
  LinearRanker ranker = d.fresh;
  // As much memory for the dense rows as the pairs themselves hold (a label and a weight).
  const uint64_t dense = state.range(0) ? AddDenseLookups(&ranker, ranker.num_pairs() * 8) : 0;
  const int threads = state.range(1) ? int(state.range(1)) : int(tbb::info::default_concurrency());
  tbb::task_arena arena(threads);
  RankerDualReport report;
  for (auto _ : state)
    arena.execute([&] {
      report = TrainRankerDual(&ranker, d.train.features, d.train.labels, d.shortlists.data(), kShortlist,
                               RankerDualOptions{});
    });
  state.counters["pairs"] = double(ranker.num_pairs());
  state.counters["dense_features"] = double(dense);
  state.counters["threads"] = threads;
  state.counters["instances"] = double(report.instances);
  state.counters["mean_passes"] = report.mean_passes;
  // Per second of the solve: visits of a candidate row's feature in a pass (each a dot and an update).
  state.counters["visits_per_s"] =
      benchmark::Counter(double(PassVisits(d)) * report.mean_passes, benchmark::Counter::kIsIterationInvariantRate);
}

// The floor of one pass on one thread: for every label, a dot product and an update over each of
// its candidate rows against a dense weight vector, as the solver does through its pairs.
void PassFloor(benchmark::State& state) {
  const RankerData& d = Data();
  std::vector<std::vector<uint32_t>> rows_of(d.fresh.num_labels);
  for (uint64_t row = 0; row < d.train.num_rows(); ++row)
    for (const uint32_t label :
         CandidatesOf(d.train.labels, row, d.shortlists.data() + row * kShortlist, kShortlist, d.fresh.num_labels).labels)
      rows_of[label].push_back(uint32_t(row));
  const data::CsrMatrix& x = d.train.features;
  std::vector<float> w(x.num_cols, 0.0f);
  for (auto _ : state) {
    for (const std::vector<uint32_t>& rows : rows_of)
      for (const uint32_t r : rows) {
        float z = 0;
        for (uint64_t j = x.RowBegin(r); j < x.RowEnd(r); ++j) z += (x.binary() ? 1.0f : x.values[j]) * w[x.col_idx[j]];
        const float step = z < 1 ? 1e-3f : 0.0f;
        for (uint64_t j = x.RowBegin(r); j < x.RowEnd(r); ++j) w[x.col_idx[j]] += step * (x.binary() ? 1.0f : x.values[j]);
      }
    benchmark::DoNotOptimize(w.data());
  }
  state.counters["visits_per_s"] = benchmark::Counter(double(PassVisits(d)), benchmark::Counter::kIsIterationInvariantRate);
}

double SecondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// The defaults' model at the Table 1 shapes: one hidden layer of 128 (apps' DefaultHidden there).
ModelShape DefaultShape(const data::Dataset& train) {
  ModelShape shape;
  shape.num_features = train.num_features();
  shape.num_labels = train.num_labels();
  shape.hidden = {128};
  return shape;
}

// The process's peak resident set so far, in MiB.
double PeakResidentMiB() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return double(usage.ru_maxrss) / 1024.0;  // KiB on Linux
}

// --math auto on CPU devices: bf16 where the CPU has it.
OutputMath DefaultCpuMath() { return cpu::Bf16Available(nullptr) ? OutputMath::kBf16 : OutputMath::kFp32; }

data::Dataset SampleRows(const data::Dataset& train, uint64_t count, std::mt19937_64* rng) {
  std::vector<uint64_t> sample(count);
  for (uint64_t& row : sample) row = (*rng)() % train.num_rows();
  return data::SelectRows(train, sample);
}

// Seconds a training step of the defaults takes on a CPU device (batch 256, momentum 0.9, dropout
// 0.5, Adagrad on the first layer, `math`), the mean of eight after one to warm up.
double DefaultStepSeconds(const data::Dataset& train, const Model<float>& initial, OutputMath math) {
  engine::StepSettings step;
  step.dropout = 0.5f;
  step.input_adagrad_ratio = 1.0f;
  constexpr uint32_t kBatch = 256;
  engine::CpuReplica replica(initial, kBatch, 0.9f, math, step);
  std::vector<uint64_t> rows(kBatch * 9);
  std::mt19937_64 rng(2);
  for (uint64_t& row : rows) row = rng() % train.num_rows();
  replica.TrainBatch(train, rows.data(), kBatch, 0.1f);
  const auto start = std::chrono::steady_clock::now();
  for (int i = 1; i < 9; ++i) replica.TrainBatch(train, rows.data() + i * kBatch, kBatch, 0.1f);
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() / 8.0;
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
        double(ranker.num_pairs() * 8 + ranker.feature_ptr.size() * 8 + ranker.dense_offset.size() * 4) / (1 << 20);
    // What a run plans for the stage (the defaults' 5,000 held-out rows beside the training rows),
    // against the process's peak resident set once the stage is done (the generated rows included).
    const ModelShape shape = DefaultShape(train);
    state.counters["planned_stage_mib"] =
        double(run::RankerStageMemory(run::RankerOptions{}, shape, train, train.num_rows(), run::kMaxHoldoutRows,
                                      ranker.num_pairs(), false)
                   .total()) /
        (1 << 20);
    std::mt19937_64 rng(1);
    std::vector<uint32_t> shortlists(train.num_rows() * kShortlist);
    for (uint32_t& label : shortlists) label = train.labels.col_idx[rng() % train.labels.nnz()];
    start = Clock::now();
    const RankerDualReport report =
        TrainRankerDual(&ranker, train.features, train.labels, shortlists.data(), kShortlist, RankerDualOptions{});
    state.counters["solve_s"] = SecondsSince(start);
    state.counters["instances"] = double(report.instances);
    state.counters["mean_passes"] = report.mean_passes;
    // The MLP's top 50 of a sample of rows, at the defaults' width and math at these shapes.
    const OutputMath math = DefaultCpuMath();
    const Model<float> mlp = InitModel<float>(shape, 1);
    const data::Dataset some = SampleRows(train, 2048, &rng);
    start = Clock::now();
    benchmark::DoNotOptimize(engine::TopLabels(mlp, some, kShortlist, {}, math).data());
    const double per_row = SecondsSince(start) / double(some.num_rows());
    state.counters["shortlist_s"] = per_row * double(train.num_rows());  // projected to every row
    state.counters["stage_s"] = state.counters["count_s"] + state.counters["build_s"] + state.counters["solve_s"] +
                                state.counters["shortlist_s"];
    // The defaults' training in the same run: 20 epochs of batches of 256, each step as eight measured.
    const double step_s = DefaultStepSeconds(train, mlp, math);
    state.counters["training_s"] = step_s * 20.0 * std::ceil(double(train.num_rows()) / 256.0);
    state.counters["stage_over_training"] = state.counters["stage_s"] / state.counters["training_s"];
    state.counters["peak_rss_mib"] = PeakResidentMiB();
    state.counters["bf16"] = math == OutputMath::kBf16 ? 1 : 0;
  }
}

// Args: math (0 fp32, 1 bf16), path (0: the whole logits, then TopK; 1: fused).
void Shortlists(benchmark::State& state) {
  const OutputMath math = state.range(0) == 1 ? OutputMath::kBf16 : OutputMath::kFp32;
  const bool fused = state.range(1) == 1;
  std::string why;
  if (math == OutputMath::kBf16 && !cpu::Bf16Available(&why)) {
    state.SkipWithError(("bf16: " + why).c_str());
    return;
  }
  if (math == OutputMath::kBf16 && !fused) {
    state.SkipWithError("the whole logits are made in fp32");
    return;
  }
  static const data::Dataset train = [] {
    data::GeneratorConfig config = data::PresetConfig("amazon670k", 1.0);
    config.test_rows = 1;
    return data::Generate(config).train;
  }();
  std::mt19937_64 rng(1);
  const data::Dataset some = SampleRows(train, 2048, &rng);
  const Model<float> mlp = InitModel<float>(DefaultShape(train), 1);
  for (auto _ : state) {
    if (fused) {
      benchmark::DoNotOptimize(engine::TopLabels(mlp, some, kShortlist, {}, math).data());
      continue;
    }
    // As the stage did before: 100-row chunks (256 MiB of logits), the whole forward, then TopK.
    constexpr uint32_t kRows = 100;
    cpu::MlpWorkspace<float> workspace(mlp.shape, kRows);
    std::vector<uint32_t> top(uint64_t(kRows) * kShortlist);
    std::vector<uint64_t> rows(kRows);
    data::SparseBatch batch;
    for (uint64_t first = 0; first < some.num_rows(); first += kRows) {
      const uint64_t count = std::min<uint64_t>(kRows, some.num_rows() - first);
      for (uint64_t i = 0; i < count; ++i) rows[i] = first + i;
      data::GatherBatch(some, rows.data(), count, &batch);
      cpu::Forward(mlp, batch, &workspace);
      cpu::TopK<float>(workspace.logits.data(), uint32_t(count), mlp.shape.num_labels, kShortlist, top.data(), nullptr);
    }
    benchmark::DoNotOptimize(top.data());
  }
  state.SetItemsProcessed(int64_t(state.iterations()) * int64_t(some.num_rows()));
  state.counters["output_GFLOP/s"] = benchmark::Counter(
      2.0 * double(mlp.shape.num_labels) * mlp.shape.hidden.back() * double(some.num_rows()) * 1e-9 *
          double(state.iterations()),
      benchmark::Counter::kIsRate);
}

BENCHMARK_CAPTURE(StageAtTable1Shape, amazon670k, std::string("amazon670k"))
    ->Unit(benchmark::kSecond)->UseRealTime()->Iterations(1);
BENCHMARK_CAPTURE(StageAtTable1Shape, delicious200k, std::string("delicious200k"))
    ->Unit(benchmark::kSecond)->UseRealTime()->Iterations(1);

BENCHMARK(Shortlists)->ArgNames({"bf16", "fused"})->Args({0, 0})->Args({0, 1})->Args({1, 1})
    ->Unit(benchmark::kMillisecond)->UseRealTime()->Iterations(2);
BENCHMARK(Solve)->ArgNames({"dense", "threads"})->Args({0, 1})->Args({1, 1})->Args({0, 0})->Args({1, 0})
    ->Unit(benchmark::kMillisecond)->UseRealTime()->Iterations(1);
BENCHMARK(PassFloor)->Unit(benchmark::kMillisecond)->Iterations(2);

}  // namespace
