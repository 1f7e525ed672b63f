// Merge throughput against the memory-bandwidth floor: the machine's parallel copy bandwidth, then
// the merges of a 32 M-parameter model, each reporting the fraction of its floor it achieves.
// Run: ./build-merge/benchmarks/bench_merge   (about 1.3 GiB of memory)
//      add --benchmark_repetitions=5 on a shared machine and read the medians
#include <benchmark/benchmark.h>
#include <tbb/parallel_for.h>
#include <tbb/task_arena.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <vector>

#include "merge/collective.h"
#include "merge/merger.h"

namespace xmlt::merge {
namespace {

constexpr size_t kModel = size_t{32} << 20;       // parameters per replica (128 MiB)
constexpr size_t kCopyBytes = size_t{256} << 20;  // far beyond any last-level cache

// One contiguous chunk per thread: large chunks make glibc's memcpy use streaming stores (no
// read for ownership), about 30% faster than 8 MiB chunks, so the floor is not flattered.
void ParallelCopy(char* dst, const char* src, size_t bytes) {
  const size_t chunks = size_t(tbb::this_task_arena::max_concurrency());
  tbb::parallel_for(
      size_t{0}, chunks,
      [&](size_t c) {
        const size_t begin = bytes * c / chunks, end = bytes * (c + 1) / chunks;
        std::memcpy(dst + begin, src + begin, end - begin);
      },
      tbb::simple_partitioner());
}

// The copy buffers, allocated once for the whole run.
struct CopyBuffers {
  std::vector<char> src = std::vector<char>(kCopyBytes, 1);
  std::vector<char> dst = std::vector<char>(kCopyBytes, 0);
};
CopyBuffers& Buffers() {
  static CopyBuffers buffers;
  return buffers;
}

// Seconds of one parallel copy of kCopyBytes (2 kCopyBytes read + written).
double TimeOneCopy() {
  CopyBuffers& b = Buffers();
  const auto t0 = std::chrono::steady_clock::now();
  ParallelCopy(b.dst.data(), b.src.data(), kCopyBytes);
  benchmark::ClobberMemory();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

void BM_CopyBandwidth(benchmark::State& state) {
  double seconds = 0.0;
  for (auto _ : state) {
    const double t = TimeOneCopy();
    state.SetIterationTime(t);
    seconds += t;
  }
  state.SetBytesProcessed(int64_t(state.iterations()) * 2 * kCopyBytes);
  state.counters["copy_GBps"] = 2.0 * kCopyBytes * double(state.iterations()) / seconds / 1e9;
}

struct Model {
  std::vector<std::vector<float>> replicas;
  GlobalModel global;
  ReplicaSet set;
  explicit Model(size_t n) : replicas(n) {
    // Small values: every replica counts as regularized, the perturbed path of Algorithm 2.
    for (size_t i = 0; i < n; ++i) replicas[i].assign(kModel, 1e-3f * float(i + 1));
    global.MutableCurrent().assign(kModel, 1e-3f);
    global.MutablePrevious().assign(kModel, 1e-3f);
    set.size = kModel;
    for (auto& r : replicas) set.members.push_back({r.data()});
  }
};

// Runs `merge` and reports its throughput over `floor_bytes` and the fraction of the floor
// (floor_bytes / copy bandwidth) it achieves. A copy is timed right before every merge, so that
// both see the same load on a shared machine; only the merge counts as the iteration's time.
// An untimed copy first absorbs the write-back of the dirty lines the last merge left in the
// last-level cache, which would otherwise be charged to the timed copy.
template <typename Merge>
void RunAgainstFloor(benchmark::State& state, double floor_bytes, Merge merge) {
  double merge_seconds = 0.0, copy_seconds = 0.0;
  for (auto _ : state) {
    TimeOneCopy();
    copy_seconds += TimeOneCopy();
    const auto t0 = std::chrono::steady_clock::now();
    merge();
    const double t = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    state.SetIterationTime(t);
    merge_seconds += t;
  }
  const double iterations = double(state.iterations());
  const double copy = 2.0 * kCopyBytes * iterations / copy_seconds;
  const double per_merge = merge_seconds / iterations;
  state.SetBytesProcessed(int64_t(floor_bytes * iterations));
  state.counters["copy_GBps"] = copy / 1e9;
  state.counters["merge_GBps"] = floor_bytes / per_merge / 1e9;
  state.counters["params_per_s"] = double(kModel) / per_merge;
  state.counters["floor_fraction"] = (floor_bytes / copy) / per_merge;
}

// Algorithm 2 on n replicas: norms read n replicas, the weighted sum reads them again, global
// current/previous are read and written, the n replicas written.
void BM_NormalizedMerge(benchmark::State& state) {
  const size_t n = size_t(state.range(0));
  Model model(n);
  auto merger = MakeNormalizedMerger(MergeOptions{}, MakeCpuPartitionedSumCollective());
  MergeInput input;
  input.batch.assign(n, 256.0);
  input.lr.assign(n, 0.1);
  for (size_t i = 0; i < n; ++i) input.updates.push_back(100 + i);
  const double floor_bytes = 4.0 * kModel * (3.0 * n + 4.0);
  RunAgainstFloor(state, floor_bytes, [&] {
    const MergeOutcome out = merger->Merge(model.set, input, &model.global);
    benchmark::DoNotOptimize(out.perturbed);
  });
}

// The replicas of Model(n) in bf16 (1e-3 (i + 1) truncated, so the perturbed path too), as `set`
// views them (--weights bf16).
struct Bf16Replicas {
  std::vector<std::vector<uint16_t>> values;
  ReplicaSet set;
  explicit Bf16Replicas(size_t n) : values(n) {
    set.size = kModel;
    set.bf16_rounding_key = 12345;
    for (size_t i = 0; i < n; ++i) {
      float v = 1e-3f * float(i + 1);
      uint32_t bits;
      std::memcpy(&bits, &v, sizeof bits);
      values[i].assign(kModel, uint16_t(bits >> 16));
      set.members.push_back({nullptr, -1, values[i].data()});
    }
  }
};

// `merger` on bf16 replicas against `fp32_merger` on fp32 ones, in the same iterations:
// bf16_over_fp32 is the ratio of their times; the floor counts two bytes a replica value over
// `replica_passes` passes, and w and w_p read and written.
template <typename MergeBf16, typename MergeFp32>
void RunBf16AgainstFp32(benchmark::State& state, double replica_passes, MergeBf16 merge_bf16, MergeFp32 merge_fp32) {
  const size_t n = size_t(state.range(0));
  double fp32_seconds = 0.0, bf16_seconds = 0.0, copy_seconds = 0.0;
  auto time = [](auto&& f) {
    const auto t0 = std::chrono::steady_clock::now();
    f();
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  };
  for (auto _ : state) {
    TimeOneCopy();  // absorbs the previous merge's dirty lines, as in RunAgainstFloor
    copy_seconds += TimeOneCopy();
    fp32_seconds += time(merge_fp32);
    TimeOneCopy();
    const double t = time(merge_bf16);
    state.SetIterationTime(t);
    bf16_seconds += t;
  }
  const double iterations = double(state.iterations());
  const double floor_bytes = 2.0 * kModel * replica_passes * n + 4.0 * kModel * 4.0;
  const double copy = 2.0 * kCopyBytes * iterations / copy_seconds;
  state.SetBytesProcessed(int64_t(floor_bytes * iterations));
  state.counters["copy_GBps"] = copy / 1e9;
  state.counters["floor_fraction"] = (floor_bytes / copy) / (bf16_seconds / iterations);
  state.counters["bf16_over_fp32"] = bf16_seconds / fp32_seconds;
}

// Algorithm 2 on bf16 replicas: the same passes over half the replicas' bytes; the norms widen, the
// sum widens and the write-back rounds stochastically (merge/replica_blocks.h).
void BM_NormalizedMergeBf16(benchmark::State& state) {
  const size_t n = size_t(state.range(0));
  Model model(n);
  Bf16Replicas bf16(n);
  auto merger = MakeNormalizedMerger(MergeOptions{}, MakeCpuPartitionedSumCollective());
  auto fp32_merger = MakeNormalizedMerger(MergeOptions{}, MakeCpuPartitionedSumCollective());
  MergeInput input;
  input.batch.assign(n, 256.0);
  input.lr.assign(n, 0.1);
  for (size_t i = 0; i < n; ++i) input.updates.push_back(100 + i);
  // The norms read every replica, the sum reads and writes it.
  RunBf16AgainstFp32(
      state, 3.0, [&] { merger->Merge(bf16.set, input, &model.global); },
      [&] { fp32_merger->Merge(model.set, input, &model.global); });
}

// The parts of the merge on bf16 replicas: the norm pass (n replicas read) and the weighted sum
// with the momentum rule (n read and written).
void BM_SquaredNormsBf16(benchmark::State& state) {
  const size_t n = size_t(state.range(0));
  Model model(n);
  Bf16Replicas bf16(n);
  auto collective = MakeCpuPartitionedSumCollective();
  RunBf16AgainstFp32(
      state, 1.0, [&] { benchmark::DoNotOptimize(collective->SquaredNorms(bf16.set)); },
      [&] { benchmark::DoNotOptimize(collective->SquaredNorms(model.set)); });
}

void BM_WeightedAllReduceWithMomentumBf16(benchmark::State& state) {
  const size_t n = size_t(state.range(0));
  Model model(n);
  Bf16Replicas bf16(n);
  auto collective = MakeCpuPartitionedSumCollective();
  const std::vector<double> weights(n, 1.0 / double(n));
  RunBf16AgainstFp32(
      state, 2.0,
      [&] { collective->WeightedAllReduceWithMomentum(bf16.set, weights, 0.9, MomentumMode::kHeavy, &model.global); },
      [&] { collective->WeightedAllReduceWithMomentum(model.set, weights, 0.9, MomentumMode::kHeavy, &model.global); });
}

// Adasum on bf16 replicas: each pass reads every replica (log2 n + 1 passes), the last writes it.
void BM_AdasumMergeBf16(benchmark::State& state) {
  const size_t n = size_t(state.range(0));
  Model model(n);
  Bf16Replicas bf16(n);
  model.set.tensors = bf16.set.tensors = {0, kModel / 2, kModel / 2 + 128, kModel - 4096};
  auto adasum = MakeAdasumMerger(MergeOptions{});
  size_t levels = 0;
  while ((size_t{1} << levels) < n) ++levels;
  RunBf16AgainstFp32(
      state, double(levels) + 2.0, [&] { adasum->Merge(bf16.set, MergeInput{}, &model.global); },
      [&] { adasum->Merge(model.set, MergeInput{}, &model.global); });
}

// Elastic averaging: no norm pass, otherwise the same traffic.
void BM_AverageMerge(benchmark::State& state) {
  const size_t n = size_t(state.range(0));
  Model model(n);
  auto merger = MakeAverageMerger(MergeOptions{}, MakeCpuPartitionedSumCollective());
  const double floor_bytes = 4.0 * kModel * (2.0 * n + 4.0);
  RunAgainstFloor(state, floor_bytes,
                  [&] { merger->Merge(model.set, MergeInput{}, &model.global); });
}

// The bare collective: n replicas read, n written.
void BM_WeightedAllReduce(benchmark::State& state) {
  const size_t n = size_t(state.range(0));
  Model model(n);
  auto collective = MakeCpuPartitionedSumCollective();
  const std::vector<double> weights(n, 1.0 / double(n));
  RunAgainstFloor(state, 4.0 * kModel * 2.0 * n,
                  [&] { collective->WeightedAllReduce(model.set, weights, nullptr); });
}

// The norm pass of Algorithm 2: n replicas read.
void BM_SquaredNorms(benchmark::State& state) {
  const size_t n = size_t(state.range(0));
  Model model(n);
  auto collective = MakeCpuPartitionedSumCollective();
  RunAgainstFloor(state, 4.0 * kModel * n,
                  [&] { benchmark::DoNotOptimize(collective->SquaredNorms(model.set)); });
}

// One collective by name: n replicas read, n written.
void BM_CollectiveAllReduce(benchmark::State& state, const char* name) {
  const size_t n = size_t(state.range(0));
  Model model(n);
  auto collective = MakeCollective(name, n);
  const std::vector<double> weights(n, 1.0 / double(n));
  RunAgainstFloor(state, 4.0 * kModel * 2.0 * n,
                  [&] { collective->WeightedAllReduce(model.set, weights, nullptr); });
}

// Adasum against the plain weighted sum (the average merge on the partitioned sum) in the same
// run: both have the same floor (n replicas read and written, global current/previous read and
// written), and Adasum adds one pass per tree level. adasum_over_sum is the ratio of their times;
// the Adasum paper calls it "almost as efficient as simply summing".
void BM_AdasumMerge(benchmark::State& state) {
  const size_t n = size_t(state.range(0));
  Model model(n);
  // A sparse MLP's tensors: first layer, its bias, output layer, its bias.
  model.set.tensors = {0, kModel / 2, kModel / 2 + 128, kModel - 4096};
  auto adasum = MakeAdasumMerger(MergeOptions{});
  auto sum = MakeAverageMerger(MergeOptions{}, MakeCpuPartitionedSumCollective());
  auto time = [](auto&& f) {
    const auto t0 = std::chrono::steady_clock::now();
    f();
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  };
  double adasum_seconds = 0.0, sum_seconds = 0.0, copy_seconds = 0.0;
  for (auto _ : state) {
    TimeOneCopy();  // absorbs the previous merge's dirty lines, as in RunAgainstFloor
    copy_seconds += TimeOneCopy();
    sum_seconds += time([&] { sum->Merge(model.set, MergeInput{}, &model.global); });
    TimeOneCopy();
    const double t = time([&] { adasum->Merge(model.set, MergeInput{}, &model.global); });
    state.SetIterationTime(t);
    adasum_seconds += t;
  }
  const double iterations = double(state.iterations());
  const double floor_bytes = 4.0 * kModel * (2.0 * n + 4.0);
  const double copy = 2.0 * kCopyBytes * iterations / copy_seconds;
  state.SetBytesProcessed(int64_t(floor_bytes * iterations));
  state.counters["copy_GBps"] = copy / 1e9;
  state.counters["merge_GBps"] = floor_bytes * iterations / adasum_seconds / 1e9;
  state.counters["floor_fraction"] = (floor_bytes / copy) / (adasum_seconds / iterations);
  state.counters["sum_floor_fraction"] = (floor_bytes / copy) / (sum_seconds / iterations);
  state.counters["adasum_over_sum"] = adasum_seconds / sum_seconds;
}

// Elastic force (EASGD, CROSSBOW): every replica read and written once with its own value, the
// center and its previous value read and written: the same floor as the average.
void BM_ElasticForceMerge(benchmark::State& state) {
  const size_t n = size_t(state.range(0));
  Model model(n);
  auto merger = MakeElasticForceMerger(MergeOptions{}, MakeCpuPartitionedSumCollective());
  const double floor_bytes = 4.0 * kModel * (2.0 * n + 4.0);
  RunAgainstFloor(state, floor_bytes,
                  [&] { merger->Merge(model.set, MergeInput{}, &model.global); });
}

// Synchronous gradient aggregation: the average of one-step replicas, same floor as the average.
void BM_GradientMerge(benchmark::State& state) {
  const size_t n = size_t(state.range(0));
  Model model(n);
  auto merger = MakeGradientMerger(MergeOptions{}, MakeCpuPartitionedSumCollective());
  const double floor_bytes = 4.0 * kModel * (2.0 * n + 4.0);
  RunAgainstFloor(state, floor_bytes,
                  [&] { merger->Merge(model.set, MergeInput{}, &model.global); });
}

BENCHMARK(BM_CopyBandwidth)->Unit(benchmark::kMillisecond)->UseManualTime();
BENCHMARK(BM_NormalizedMerge)->Arg(4)->Arg(2)->Unit(benchmark::kMillisecond)->UseManualTime();
BENCHMARK(BM_NormalizedMergeBf16)->Arg(4)->Arg(2)->Unit(benchmark::kMillisecond)->UseManualTime();
BENCHMARK(BM_AverageMerge)->Arg(4)->Unit(benchmark::kMillisecond)->UseManualTime();
BENCHMARK(BM_WeightedAllReduce)->Arg(4)->Unit(benchmark::kMillisecond)->UseManualTime();
BENCHMARK(BM_SquaredNorms)->Arg(4)->Unit(benchmark::kMillisecond)->UseManualTime();
BENCHMARK_CAPTURE(BM_CollectiveAllReduce, ring, "ring")
    ->Arg(4)->Unit(benchmark::kMillisecond)->UseManualTime();
BENCHMARK_CAPTURE(BM_CollectiveAllReduce, tree, "tree")
    ->Arg(4)->Unit(benchmark::kMillisecond)->UseManualTime();
BENCHMARK_CAPTURE(BM_CollectiveAllReduce, naive, "naive")
    ->Arg(4)->Unit(benchmark::kMillisecond)->UseManualTime();
BENCHMARK(BM_SquaredNormsBf16)->Arg(2)->Unit(benchmark::kMillisecond)->UseManualTime();
BENCHMARK(BM_WeightedAllReduceWithMomentumBf16)->Arg(2)->Unit(benchmark::kMillisecond)->UseManualTime();
BENCHMARK(BM_AdasumMergeBf16)->Arg(4)->Arg(2)->Unit(benchmark::kMillisecond)->UseManualTime();
BENCHMARK(BM_AdasumMerge)->Arg(4)->Unit(benchmark::kMillisecond)->UseManualTime();
BENCHMARK(BM_ElasticForceMerge)->Arg(4)->Unit(benchmark::kMillisecond)->UseManualTime();
BENCHMARK(BM_GradientMerge)->Arg(4)->Unit(benchmark::kMillisecond)->UseManualTime();

}  // namespace
}  // namespace xmlt::merge
