// Training throughput (samples/s) of the CPU backend on generated data shaped like the paper's
// datasets, and the share of one step spent in each part, at the batch sizes researchers use.
#include <benchmark/benchmark.h>

#include <map>
#include <numeric>
#include <random>

#include "data/row_normalization.h"
#include "data/synthetic_generator.h"
#include "engine/cpu_replica.h"
#include "kernels/model.h"

namespace {

using namespace xmlt;

const data::Dataset& Generated(const std::string& preset) {
  static std::map<std::string, data::Dataset> cache;
  auto it = cache.find(preset);
  if (it == cache.end()) {
    data::GeneratorConfig config = data::PresetConfig(preset, 0.01);
    config.test_rows = 1;
    it = cache.emplace(preset, data::NormalizeRowsL2(data::Generate(config).train)).first;
  }
  return it->second;
}

// Args: batch size, hidden units. Counts samples processed.
void TrainSteps(benchmark::State& state, const std::string& preset) {
  const data::Dataset& train = Generated(preset);
  const uint32_t batch = uint32_t(state.range(0));
  kernels::ModelShape shape{train.num_features(), {uint32_t(state.range(1))}, train.num_labels()};
  engine::CpuReplica replica(kernels::InitModel<float>(shape, 1), batch, 0.9f);
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
  state.counters["labels"] = double(train.num_labels());
  state.counters["features"] = double(train.num_features());
}

BENCHMARK_CAPTURE(TrainSteps, amazon670k_scale0_01, std::string("amazon670k"))
    ->Args({128, 128})->Args({256, 128})->Args({256, 256})->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK_CAPTURE(TrainSteps, delicious200k_scale0_01, std::string("delicious200k"))
    ->Args({256, 128})->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace
