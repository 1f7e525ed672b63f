// SLIDE's tables alone: building them over a whole output layer (what --algo slide does at every
// merge and, for the labels its steps touched, on the rehash schedule) and querying them with one
// hidden activation (once per training row). Random weights, not a trained layer: the hashing's
// cost does not depend on the values, the buckets' sizes (and so a query's) do.
#include <benchmark/benchmark.h>

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "kernels/lsh/hash_family.h"
#include "kernels/lsh/label_tables.h"

namespace {

using namespace xmlt::kernels;

std::vector<float> RandomRows(size_t rows, size_t dim, bool relu) {
  std::vector<float> values(rows * dim);
  std::mt19937 rng(1);
  std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
  for (float& v : values) {
    v = uniform(rng);
    if (relu && v < 0) v = 0;
  }
  return values;
}

// Args: labels, hidden units. DWTA K=8 L=50 (SLIDE's Amazon-670K settings) or SimHash K=9 L=50
// (its Delicious-200K settings), buckets capped at 2^18 as --algo slide's.
void TablesBuild(benchmark::State& state, const std::string& family, size_t k) {
  const size_t labels = size_t(state.range(0)), dim = size_t(state.range(1));
  const std::vector<float> weights = RandomRows(labels, dim, false);
  lsh::LabelTables tables(lsh::MakeHashFamily(family, k, 50, dim, 1), labels, 18, 1);
  for (auto _ : state) tables.Build(weights.data());
  state.SetItemsProcessed(int64_t(state.iterations()) * int64_t(labels));
}

void TablesQuery(benchmark::State& state, const std::string& family, size_t k) {
  const size_t labels = size_t(state.range(0)), dim = size_t(state.range(1));
  const std::vector<float> weights = RandomRows(labels, dim, false);
  const std::vector<float> queries = RandomRows(256, dim, true);
  lsh::LabelTables tables(lsh::MakeHashFamily(family, k, 50, dim, 1), labels, 18, 1);
  tables.Build(weights.data());
  std::vector<uint32_t> seen(labels, 0), active;
  uint32_t stamp = 0;
  size_t row = 0, found = 0;
  for (auto _ : state) {
    active.clear();
    found += tables.Query(queries.data() + (row++ % 256) * dim, 128, &seen, ++stamp, &active);
  }
  state.SetItemsProcessed(int64_t(state.iterations()));
  state.counters["active"] = double(found) / double(state.iterations());
}

}  // namespace

BENCHMARK_CAPTURE(TablesBuild, dwta_k8, std::string("dwta"), 8)
    ->Args({670091, 128})->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK_CAPTURE(TablesBuild, simhash_k9, std::string("simhash"), 9)
    ->Args({205443, 128})->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK_CAPTURE(TablesQuery, dwta_k8, std::string("dwta"), 8)->Args({670091, 128})->UseRealTime();
BENCHMARK_CAPTURE(TablesQuery, simhash_k9, std::string("simhash"), 9)->Args({205443, 128})->UseRealTime();
