// Training throughput (samples/s and GFLOP/s) of the CPU backend on generated data shaped like the
// paper's datasets, at scale 0.01 and at the full Table 1 shapes, and the rate of the output
// layer's three GEMMs alone at the same shapes: the step's physical limit on this machine.
#include <benchmark/benchmark.h>
#include <tbb/blocked_range.h>
#include <tbb/enumerable_thread_specific.h>
#include <tbb/parallel_for.h>
#include <tbb/partitioner.h>

#include <cstdlib>
#include <map>
#include <numeric>
#include <random>

#include "data/row_normalization.h"
#include "data/synthetic_generator.h"
#include "engine/cpu_replica.h"
#include "engine/sampled_cpu_device.h"
#include "run/one_device_run.h"
#include "kernels/cpu/bf16_gemm.h"
#include "kernels/cpu/cpu_isa.h"
#include "kernels/cpu/gemm.h"
#include "kernels/cpu/output_layer.h"
#include "kernels/model.h"

namespace {

using namespace xmlt;

// Scale 0.01 keeps the preset's rows; the full shapes keep 4,096 rows (enough batches to cycle
// through, with exactly the preset's features and labels).
const data::Dataset& Generated(const std::string& preset, double scale) {
  static std::map<std::pair<std::string, double>, data::Dataset> cache;
  auto it = cache.find({preset, scale});
  if (it == cache.end()) {
    data::GeneratorConfig config = data::PresetConfig(preset, scale);
    if (scale == 1) config.train_rows = 4096;
    config.test_rows = 1;
    it = cache.emplace(std::make_pair(preset, scale), data::NormalizeRowsL2(data::Generate(config).train)).first;
  }
  return it->second;
}

// Multiply-adds x 2 of the output layer's three products (logits, input gradient, weight
// gradient) per row: the bulk of a step's arithmetic.
double OutputFlopsPerRow(uint64_t labels, uint64_t hidden) { return 3.0 * 2.0 * double(labels) * double(hidden); }

// Rows processed and the GFLOP/s of the output layer's three products, for the products-alone
// benchmarks.
void SetOutputProductRate(benchmark::State& state, int64_t rows, int64_t hidden, int64_t labels) {
  state.SetItemsProcessed(int64_t(state.iterations()) * rows);
  state.counters["GFLOP/s"] = benchmark::Counter(
      OutputFlopsPerRow(uint64_t(labels), uint64_t(hidden)) * double(rows) * 1e-9 * double(state.iterations()),
      benchmark::Counter::kIsRate);
}

// Args: batch size, hidden units. Counts samples processed. `math` is the output layer's --math;
// `cpu_defaults`: the step `train`'s defaults give a CPU device (dropout 0.5 on the hidden layer,
// Adagrad on the first layer's rows), else heavy ball on every layer without dropout.
// `bf16_state`: the momentum and squares kept in bf16 (--optimizer-state bf16, with bf16 math);
// `bf16_weights`: the weights too (--weights bf16, one CPU device's default with bf16 math).
void TrainSteps(benchmark::State& state, const std::string& preset, double scale,
                kernels::OutputMath math = kernels::OutputMath::kFp32, bool cpu_defaults = false,
                bool bf16_state = false, bool bf16_weights = false) {
  std::string why;
  if (math == kernels::OutputMath::kBf16 && !kernels::cpu::Bf16Available(&why)) {
    state.SkipWithError(("bf16: " + why).c_str());
    return;
  }
  const data::Dataset& train = Generated(preset, scale);
  const uint32_t batch = uint32_t(state.range(0));
  kernels::ModelShape shape{train.num_features(), {uint32_t(state.range(1))}, train.num_labels()};
  engine::StepSettings step;
  if (cpu_defaults) step.dropout = 0.5f, step.input_adagrad_ratio = 1.0f;
  step.bf16_optimizer_state = bf16_state;
  step.bf16_weights = bf16_weights;
  engine::CpuReplica replica(kernels::InitModel<float>(shape, 1), batch, 0.9f, math, step);
  std::vector<uint64_t> order(train.num_rows());
  std::iota(order.begin(), order.end(), 0);
  std::shuffle(order.begin(), order.end(), std::mt19937_64(1));
  size_t cursor = 0;
  for (auto _ : state) {
    if (cursor + batch > order.size()) cursor = 0;
    benchmark::DoNotOptimize(replica.TrainBatch(train, order.data() + cursor, batch, 0.1f));
    cursor += batch;
  }
  state.SetItemsProcessed(int64_t(state.iterations()) * batch);
  // The whole step's arithmetic: the three output products and the first layer's two sparse ones.
  const double flops = OutputFlopsPerRow(train.num_labels(), shape.hidden[0]) +
                       4.0 * double(train.features.nnz()) / double(train.num_rows()) * double(shape.hidden[0]);
  state.counters["GFLOP/s"] = benchmark::Counter(flops * double(batch) * 1e-9 * double(state.iterations()),
                                                  benchmark::Counter::kIsRate);
  state.counters["labels"] = double(train.num_labels());
  state.counters["features"] = double(train.num_features());
}

// --algo slide's step (engine/sampled_cpu_device.h) with SLIDE's settings for the label count, on
// the same rows as TrainSteps, so that the two samples/s compare directly. The tables are built
// before the timing; their rehashes on the schedule are inside it. Args: batch size, hidden units.
void SampledSteps(benchmark::State& state, const std::string& preset, double scale) {
  const data::Dataset& train = Generated(preset, scale);
  const uint32_t batch = uint32_t(state.range(0));
  kernels::ModelShape shape{train.num_features(), {uint32_t(state.range(1))}, train.num_labels()};
  const engine::SampledOutputOptions options = engine::SampledOutputOptions::PresetFor(train.num_labels());
  std::unique_ptr<engine::Device> device = engine::MakeSampledCpuDevice(
      engine::DeviceSpec{}, kernels::InitModel<float>(shape, 1), engine::LimitsFor(train, batch), 0.0f, options);
  std::vector<uint64_t> order(train.num_rows());
  std::iota(order.begin(), order.end(), 0);
  std::shuffle(order.begin(), order.end(), std::mt19937_64(1));
  size_t cursor = 0;
  for (auto _ : state) {
    if (cursor + batch > order.size()) cursor = 0;
    benchmark::DoNotOptimize(device->TrainBatch(train, order.data() + cursor, batch, 1.0f));
    cursor += batch;
  }
  state.SetItemsProcessed(int64_t(state.iterations()) * batch);
  state.SetLabel(options.hash + " K=" + std::to_string(options.k) + " L=" + std::to_string(options.l));
}

// The whole tables rebuilt from the output layer, as --algo slide does at every merge (once a
// mega-batch): what a mega-batch of SampledSteps pays on top of its steps.
void SampledTablesRebuild(benchmark::State& state, const std::string& preset) {
  const data::Dataset& train = Generated(preset, 1.0);
  kernels::ModelShape shape{train.num_features(), {uint32_t(state.range(0))}, train.num_labels()};
  const engine::SampledOutputOptions options = engine::SampledOutputOptions::PresetFor(train.num_labels());
  std::unique_ptr<engine::Device> device = engine::MakeSampledCpuDevice(
      engine::DeviceSpec{}, kernels::InitModel<float>(shape, 1), engine::LimitsFor(train, 256), 0.0f, options);
  for (auto _ : state) device->FinishMerge();
  state.SetLabel(options.hash + " K=" + std::to_string(options.k) + " L=" + std::to_string(options.l));
}

// TrainSteps' work through the engine with one device (--algo single): the manager thread, the
// result queue, a merge and the saved states per mega-batch, and the run's bookkeeping, around the
// same steps. Its rate against TrainSteps' at the same Args is the price of the one training loop.
// Args: batch size, hidden units, epochs per iteration: 20 (at a batch of 256, 384 batches), so
// that setting the run up (the replica, its buffers' first touch) weighs little, as in a real run;
// 1 shows what the setting up costs.
void EngineOneDevice(benchmark::State& state, const std::string& preset, double scale) {
  const data::Dataset& train = Generated(preset, scale);
  scheduler::TrainOptions options;
  options.batch = uint32_t(state.range(0));
  options.hidden = {uint32_t(state.range(1))};
  options.lr = 0.1f;
  options.local_momentum = 0.9f;
  options.epochs = double(state.range(2));
  options.eval.kind = scheduler::EvalSchedule::Kind::kEnd;
  kernels::ModelShape shape{train.num_features(), options.hidden, train.num_labels()};
  kernels::Model<float> model = kernels::InitModel<float>(shape, 1);
  uint64_t rows = 0;
  for (auto _ : state) {
    const run::TrainResult result = run::TrainOnOneDevice(train, nullptr, options, &model);
    rows += result.last.train_samples;
  }
  state.SetItemsProcessed(int64_t(rows));
}

// The output layer's three GEMMs at a step's shapes, alone: logits = A W^T, dA = D W, dW = D^T A,
// as one BLAS call per block of labels per product, blocks spread over the threads (the way the
// fused layer calls them, and faster here than tiling each whole product). This is the GEMM rate
// the step is measured against. Args: batch rows, hidden units, labels.
void OutputGemms(benchmark::State& state) {
  const int64_t rows = state.range(0), hidden = state.range(1), labels = state.range(2);
  const int64_t block = int64_t(xmlt::kernels::cpu::OutputBlockLabels(uint32_t(rows), uint64_t(hidden)));
  const int64_t blocks = (labels + block - 1) / block;
  std::vector<float> a(rows * hidden), w(labels * hidden), z(rows * labels);
  std::vector<float> da(blocks * rows * hidden);
  std::mt19937_64 rng(1);
  std::uniform_real_distribution<float> uniform(-1, 1);
  for (float& x : a) x = uniform(rng);
  for (float& x : w) x = uniform(rng) * 0.01f;
  for (float& x : z) x = uniform(rng) * 1e-6f;
  using xmlt::kernels::cpu::GemmOneThread;
  using xmlt::kernels::cpu::Op;
  for (auto _ : state) {
    tbb::parallel_for(tbb::blocked_range<int64_t>(0, blocks, 1), [&](const tbb::blocked_range<int64_t>& range) {
      for (int64_t b = range.begin(); b < range.end(); ++b) {
        const int64_t j0 = b * block, width = std::min(block, labels - j0);
        GemmOneThread<float>(Op::kNone, Op::kTranspose, rows, width, hidden, 1, a.data(), hidden,
                             w.data() + j0 * hidden, hidden, 0, z.data() + j0, labels);
        GemmOneThread<float>(Op::kNone, Op::kNone, rows, hidden, width, 1, z.data() + j0, labels,
                             w.data() + j0 * hidden, hidden, 0, da.data() + b * rows * hidden, hidden);
        GemmOneThread<float>(Op::kTranspose, Op::kNone, width, hidden, rows, -0.1f, z.data() + j0, labels,
                             a.data(), hidden, 1, w.data() + j0 * hidden, hidden);
      }
    }, tbb::simple_partitioner());
    benchmark::ClobberMemory();
  }
  SetOutputProductRate(state, rows, hidden, labels);
}

// The bf16 step's products (--math bf16) alone, called as the step calls them: per block, the
// logits into a rows x width tile, the same logits again in the backward pass (the step keeps no
// rows x labels array), the input gradient and the weight gradient from a rows x width bf16 tile
// of the output gradient. Operands are converted once, outside the timing: the bf16 step's limit.
void OutputGemmsBf16(benchmark::State& state) {
  using xmlt::kernels::cpu::Bf16;
  using xmlt::kernels::cpu::Bf16GemmOneThread;
  using xmlt::kernels::cpu::Op;
  std::string why;
  if (!xmlt::kernels::cpu::Bf16Available(&why)) {
    state.SkipWithError(("bf16: " + why).c_str());
    return;
  }
  const int64_t rows = state.range(0), hidden = state.range(1), labels = state.range(2);
  const int64_t block = int64_t(xmlt::kernels::cpu::OutputBlockLabels(uint32_t(rows), uint64_t(hidden)));
  const int64_t blocks = (labels + block - 1) / block;
  std::vector<Bf16> a(rows * hidden), w(labels * hidden), d(rows * block);
  std::vector<float> dw(labels * hidden), da(blocks * rows * hidden);
  std::mt19937_64 rng(1);
  std::uniform_real_distribution<float> uniform(-1, 1);
  for (Bf16& x : a) x = xmlt::kernels::cpu::FloatToBf16(uniform(rng));
  for (Bf16& x : w) x = xmlt::kernels::cpu::FloatToBf16(uniform(rng) * 0.01f);
  for (Bf16& x : d) x = xmlt::kernels::cpu::FloatToBf16(uniform(rng) * 1e-6f);
  tbb::enumerable_thread_specific<std::vector<float>> tiles([&] { return std::vector<float>(rows * block); });
  for (auto _ : state) {
    tbb::parallel_for(tbb::blocked_range<int64_t>(0, blocks, 1), [&](const tbb::blocked_range<int64_t>& range) {
      float* z = tiles.local().data();
      for (int64_t b = range.begin(); b < range.end(); ++b) {
        const int64_t j0 = b * block, width = std::min(block, labels - j0);
        for (int pass = 0; pass < 2; ++pass)
          Bf16GemmOneThread(Op::kNone, Op::kTranspose, rows, width, hidden, a.data(), hidden,
                            w.data() + j0 * hidden, hidden, false, z, width);
        Bf16GemmOneThread(Op::kNone, Op::kNone, rows, hidden, width, d.data(), width,
                          w.data() + j0 * hidden, hidden, false, da.data() + b * rows * hidden, hidden);
        Bf16GemmOneThread(Op::kTranspose, Op::kNone, width, hidden, rows, d.data(), width,
                          a.data(), hidden, false, dw.data() + j0 * hidden, hidden);
      }
    }, tbb::simple_partitioner());
    benchmark::ClobberMemory();
  }
  // The rate of the three products the step needs (the repeated logits are the price of not
  // storing them, counted as time, not as work).
  SetOutputProductRate(state, rows, hidden, labels);
}

// The ISA of the step's vector kernels (XMLT_CPU_ISA or the CPU's widest) and OpenBLAS's kernel
// (OPENBLAS_CORETYPE or its own choice), and the float products' library (XMLT_SGEMM, kernels/cpu/gemm.cc)
// in the output's context: what a figure was measured with.
extern "C" char* openblas_get_corename(void) __attribute__((weak));
const bool kContext = [] {
  try {
    benchmark::AddCustomContext("cpu_isa", kernels::cpu::CpuIsaName(kernels::cpu::ActiveCpuIsa()));
  } catch (const std::exception& e) {
    benchmark::AddCustomContext("cpu_isa", std::string("error: ") + e.what());
  }
  if (openblas_get_corename != nullptr) benchmark::AddCustomContext("openblas_core", openblas_get_corename());
  const char* sgemm = std::getenv("XMLT_SGEMM");
  benchmark::AddCustomContext("sgemm", sgemm != nullptr && *sgemm != '\0' ? sgemm : "auto");
  return true;
}();

BENCHMARK_CAPTURE(TrainSteps, amazon670k_scale0_01, std::string("amazon670k"), 0.01)
    ->Args({128, 128})->Args({256, 128})->Args({256, 256})->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK_CAPTURE(TrainSteps, delicious200k_scale0_01, std::string("delicious200k"), 0.01)
    ->Args({256, 128})->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK_CAPTURE(EngineOneDevice, amazon670k_scale0_01, std::string("amazon670k"), 0.01)
    ->Args({128, 128, 20})->Args({256, 128, 20})->Args({256, 128, 1})->Unit(benchmark::kMillisecond)->UseRealTime();
// At scale 0.1 an epoch is 191 batches of 256, so mega-batches are the default 100 batches and
// what remains between the two rates is the per-batch hop through the manager thread.
BENCHMARK_CAPTURE(TrainSteps, amazon670k_scale0_1, std::string("amazon670k"), 0.1)
    ->Args({256, 128})->Unit(benchmark::kMillisecond)->UseRealTime()->MinTime(5);
BENCHMARK_CAPTURE(EngineOneDevice, amazon670k_scale0_1, std::string("amazon670k"), 0.1)
    ->Args({256, 128, 2})->Unit(benchmark::kMillisecond)->UseRealTime();
// The full Table 1 shapes: 135,909 x 670,091 and 782,585 x 205,443.
BENCHMARK_CAPTURE(TrainSteps, amazon670k_full, std::string("amazon670k"), 1.0)
    ->Args({256, 128})->Unit(benchmark::kMillisecond)->UseRealTime()->MinTime(5);
BENCHMARK_CAPTURE(TrainSteps, delicious200k_full, std::string("delicious200k"), 1.0)
    ->Args({256, 128})->Unit(benchmark::kMillisecond)->UseRealTime()->MinTime(5);
BENCHMARK_CAPTURE(TrainSteps, amazon670k_full_cpu_defaults, std::string("amazon670k"), 1.0, kernels::OutputMath::kFp32,
                  true)
    ->Args({256, 128})->Unit(benchmark::kMillisecond)->UseRealTime()->MinTime(5);
BENCHMARK_CAPTURE(TrainSteps, delicious200k_full_cpu_defaults, std::string("delicious200k"), 1.0,
                  kernels::OutputMath::kFp32, true)
    ->Args({256, 128})->Unit(benchmark::kMillisecond)->UseRealTime()->MinTime(5);
// The defaults where the CPU has native bf16 (--math auto takes it there).
BENCHMARK_CAPTURE(TrainSteps, amazon670k_full_cpu_defaults_bf16, std::string("amazon670k"), 1.0,
                  kernels::OutputMath::kBf16, true)
    ->Args({256, 128})->Unit(benchmark::kMillisecond)->UseRealTime()->MinTime(5);
BENCHMARK_CAPTURE(TrainSteps, delicious200k_full_cpu_defaults_bf16, std::string("delicious200k"), 1.0,
                  kernels::OutputMath::kBf16, true)
    ->Args({256, 128})->Unit(benchmark::kMillisecond)->UseRealTime()->MinTime(5);
// The same with the state in bf16 too (--optimizer-state auto takes it with bf16 math): against
// the two above, what rounding the state costs or saves a step.
BENCHMARK_CAPTURE(TrainSteps, amazon670k_full_cpu_defaults_bf16_state, std::string("amazon670k"), 1.0,
                  kernels::OutputMath::kBf16, true, true)
    ->Args({256, 128})->Unit(benchmark::kMillisecond)->UseRealTime()->MinTime(5);
BENCHMARK_CAPTURE(TrainSteps, delicious200k_full_cpu_defaults_bf16_state, std::string("delicious200k"), 1.0,
                  kernels::OutputMath::kBf16, true, true)
    ->Args({256, 128})->Unit(benchmark::kMillisecond)->UseRealTime()->MinTime(5);
// And the weights in bf16 as well (--weights auto on one CPU device): against the two above, what
// widening and rounding the weights cost or save a step.
BENCHMARK_CAPTURE(TrainSteps, amazon670k_full_cpu_defaults_bf16_weights, std::string("amazon670k"), 1.0,
                  kernels::OutputMath::kBf16, true, true, true)
    ->Args({256, 128})->Unit(benchmark::kMillisecond)->UseRealTime()->MinTime(5);
BENCHMARK_CAPTURE(TrainSteps, delicious200k_full_cpu_defaults_bf16_weights, std::string("delicious200k"), 1.0,
                  kernels::OutputMath::kBf16, true, true, true)
    ->Args({256, 128})->Unit(benchmark::kMillisecond)->UseRealTime()->MinTime(5);
BENCHMARK(OutputGemms)->Args({256, 128, 670091})->Args({256, 128, 205443})
    ->Unit(benchmark::kMillisecond)->UseRealTime()->MinTime(5);
// SLIDE at the full shapes: against TrainSteps' samples/s at the same Args (issue: 10x or more).
BENCHMARK_CAPTURE(SampledSteps, amazon670k_full, std::string("amazon670k"), 1.0)
    ->Args({256, 128})->Unit(benchmark::kMillisecond)->UseRealTime()->MinTime(5);
BENCHMARK_CAPTURE(SampledSteps, delicious200k_full, std::string("delicious200k"), 1.0)
    ->Args({256, 128})->Unit(benchmark::kMillisecond)->UseRealTime()->MinTime(5);
BENCHMARK_CAPTURE(SampledTablesRebuild, amazon670k_full, std::string("amazon670k"))
    ->Arg(128)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK_CAPTURE(SampledTablesRebuild, delicious200k_full, std::string("delicious200k"))
    ->Arg(128)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK_CAPTURE(TrainSteps, amazon670k_full_bf16, std::string("amazon670k"), 1.0, kernels::OutputMath::kBf16)
    ->Args({256, 128})->Unit(benchmark::kMillisecond)->UseRealTime()->MinTime(5);
BENCHMARK_CAPTURE(TrainSteps, delicious200k_full_bf16, std::string("delicious200k"), 1.0, kernels::OutputMath::kBf16)
    ->Args({256, 128})->Unit(benchmark::kMillisecond)->UseRealTime()->MinTime(5);
BENCHMARK(OutputGemmsBf16)->Args({256, 128, 670091})->Args({256, 128, 205443})
    ->Unit(benchmark::kMillisecond)->UseRealTime()->MinTime(5);

}  // namespace
