// Data-layer throughput: parsing Amazon-670K-shaped text (1 thread and all threads) and loading the
// same data from the .xmlb cache. Run: build/benchmarks/bench_data [--benchmark_filter=...]
#include <benchmark/benchmark.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "data/binary_cache.h"
#include "data/dataset_loader.h"
#include "data/text_reader.h"

namespace xmlt::data {
namespace {

constexpr size_t kTextBytes = size_t{80} << 20;
constexpr uint32_t kFeatures = 135909, kLabels = 670091;

void AppendSortedIds(std::mt19937_64* rng, uint32_t count, uint32_t limit,
                     std::vector<uint32_t>* ids) {
  ids->clear();
  for (uint32_t i = 0; i < count; ++i) ids->push_back(static_cast<uint32_t>((*rng)() % limit));
  std::sort(ids->begin(), ids->end());
  ids->erase(std::unique(ids->begin(), ids->end()), ids->end());
}

// Rows like Amazon-670K: ~5 labels, ~76 features with 6-decimal values, in XML-repository format.
const std::string& AmazonLikeText() {
  static const std::string text = [] {
    std::mt19937_64 rng(42);
    std::string body;
    body.reserve(kTextBytes + 4096);
    std::vector<uint32_t> ids;
    uint64_t rows = 0;
    char number[32];
    while (body.size() < kTextBytes) {
      AppendSortedIds(&rng, 1 + rng() % 9, kLabels, &ids);
      for (size_t i = 0; i < ids.size(); ++i) {
        if (i > 0) body += ',';
        body.append(number, std::to_chars(number, number + 32, ids[i]).ptr);
      }
      AppendSortedIds(&rng, 46 + rng() % 61, kFeatures, &ids);
      for (uint32_t id : ids) {
        body += ' ';
        body.append(number, std::to_chars(number, number + 32, id).ptr);
        const int written = std::snprintf(number, sizeof number, ":%.6f",
                                          static_cast<double>(rng() % 100000000) / 1e6);
        body.append(number, written);
      }
      body += '\n';
      ++rows;
    }
    return std::to_string(rows) + " " + std::to_string(kFeatures) + " " + std::to_string(kLabels) +
           "\n" + body;
  }();
  return text;
}

void BM_ParseText(benchmark::State& state) {
  const std::string& text = AmazonLikeText();
  LoadOptions options;
  options.threads = static_cast<int>(state.range(0));  // 0 = all
  for (auto _ : state) {
    Dataset dataset = ParseLabeledText(text, "bench.txt", options);
    benchmark::DoNotOptimize(dataset.features.col_idx.data());
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * text.size()));
  state.counters["text_MB"] = static_cast<double>(text.size()) / 1e6;
}
BENCHMARK(BM_ParseText)
    ->Arg(1)
    ->Arg(0)
    ->ArgName("threads")
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);

// The cache file lives in the temp dir for the program's lifetime.
struct CacheFile {
  CacheFile() {
    const char* dir = std::getenv("TMPDIR");
    path = std::string(dir ? dir : "/tmp") + "/xmlt-bench-" + std::to_string(::getpid()) + ".xmlb";
    WriteBinaryCache(ParseLabeledText(AmazonLikeText(), "bench.txt", {}), path, false);
    struct stat info {};
    bytes = ::stat(path.c_str(), &info) == 0 ? static_cast<uint64_t>(info.st_size) : 0;
  }
  ~CacheFile() { std::remove(path.c_str()); }
  std::string path;
  uint64_t bytes = 0;
};

void BM_ReadBinaryCache(benchmark::State& state) {
  static const CacheFile cache;
  for (auto _ : state) {
    Dataset dataset = ReadBinaryCache(cache.path);
    benchmark::DoNotOptimize(dataset.features.col_idx.data());
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * cache.bytes));
}
BENCHMARK(BM_ReadBinaryCache)->UseRealTime()->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace xmlt::data
