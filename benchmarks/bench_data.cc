// Data-layer throughput: parsing Amazon-670K-shaped text (1 thread and all threads), plain or
// gzip/zstd compressed, gzip's inflate alone (ISA-L, the reader's, against zlib), and loading the
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

#include <zlib.h>
#include <zstd.h>

#include "data/binary_cache.h"
#include "data/decompressor.h"
#include "data/mapped_file.h"
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

std::string TempPath(const std::string& suffix) {
  const char* dir = std::getenv("TMPDIR");
  return std::string(dir ? dir : "/tmp") + "/xmlt-bench-" + std::to_string(::getpid()) + suffix;
}

void WriteAll(const std::string& path, const std::string& bytes) {
  FILE* f = std::fopen(path.c_str(), "wb");
  if (!f || std::fwrite(bytes.data(), 1, bytes.size(), f) != bytes.size() || std::fclose(f) != 0) std::abort();
}

// The text compressed as the gzip (level 6) and zstd (level 3, with checksums) tools do by
// default, in the temp dir for the program's lifetime.
struct CompressedFiles {
  CompressedFiles() {
    const std::string& text = AmazonLikeText();
    z_stream z{};
    deflateInit2(&z, 6, Z_DEFLATED, 16 + MAX_WBITS, 8, Z_DEFAULT_STRATEGY);
    std::string out(deflateBound(&z, text.size()), '\0');
    z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(text.data()));
    z.avail_in = uInt(text.size());
    z.next_out = reinterpret_cast<Bytef*>(out.data());
    z.avail_out = uInt(out.size());
    if (deflate(&z, Z_FINISH) != Z_STREAM_END) std::abort();
    out.resize(z.total_out);
    deflateEnd(&z);
    WriteAll(gzip, out);
    ZSTD_CCtx* context = ZSTD_createCCtx();
    ZSTD_CCtx_setParameter(context, ZSTD_c_checksumFlag, 1);
    out.assign(ZSTD_compressBound(text.size()), '\0');
    out.resize(ZSTD_compress2(context, out.data(), out.size(), text.data(), text.size()));
    ZSTD_freeCCtx(context);
    WriteAll(zstd, out);
  }
  ~CompressedFiles() {
    std::remove(gzip.c_str());
    std::remove(zstd.c_str());
  }
  std::string gzip = TempPath(".txt.gz"), zstd = TempPath(".txt.zst");
};

const CompressedFiles& Compressed() {
  static const CompressedFiles files;
  return files;
}

// LoadDataset on the file, plain, gzip or zstd: mapping, decompression and parsing, as `train`
// reads it. Format 3 parses the plain file's mapping directly: against it, the plain arm is the
// cost of LoadDataset's checks that the file did not change while it was read (two stamps).
void BM_LoadTextFile(benchmark::State& state) {
  static const std::string plain = [] {
    const std::string path = TempPath(".txt");
    WriteAll(path, AmazonLikeText());
    std::atexit([] { std::remove(TempPath(".txt").c_str()); });
    return path;
  }();
  const int64_t format = state.range(0);
  const std::string& path = format == 0 || format == 3 ? plain : format == 1 ? Compressed().gzip : Compressed().zstd;
  LoadOptions options;
  options.use_cache = false;
  options.threads = static_cast<int>(state.range(1));  // 0 = all
  for (auto _ : state) {
    Dataset dataset = format == 3 ? ParseLabeledText(MappedFile::Open(path)->view(), path, options)
                                  : LoadDataset(path, options);
    benchmark::DoNotOptimize(dataset.features.col_idx.data());
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * AmazonLikeText().size()));
  state.SetLabel(format == 0 ? "plain" : format == 1 ? "gzip" : format == 2 ? "zstd" : "plain, mapped");
}
BENCHMARK(BM_LoadTextFile)
    ->ArgsProduct({{0, 3, 1, 2}, {1, 0}})
    ->ArgNames({"format", "threads"})
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);

// Inflating the gzip file alone: ISA-L (what the reader uses) against zlib.
void BM_InflateGzip(benchmark::State& state) {
  const std::string& path = Compressed().gzip;
  std::vector<char> out(size_t{8} << 20);
  for (auto _ : state) {
    size_t total = 0;
    if (state.range(0) == 0) {
      auto inflater = MakeGzipDecompressor(MappedFile::Open(path), path);
      while (const size_t got = inflater->Read(out.data(), out.size())) total += got;
    } else {
      auto file = MappedFile::Open(path);
      z_stream z{};
      inflateInit2(&z, 16 + MAX_WBITS);
      z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(file->data()));
      z.avail_in = uInt(file->size());
      int status = Z_OK;
      while (status == Z_OK) {
        z.next_out = reinterpret_cast<Bytef*>(out.data());
        z.avail_out = uInt(out.size());
        status = inflate(&z, Z_NO_FLUSH);
        total += out.size() - z.avail_out;
      }
      inflateEnd(&z);
    }
    if (total != AmazonLikeText().size()) state.SkipWithError("inflated size differs from the text");
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * AmazonLikeText().size()));
  state.SetLabel(state.range(0) == 0 ? "isa-l" : "zlib");
}
BENCHMARK(BM_InflateGzip)->Arg(0)->Arg(1)->ArgName("zlib")->UseRealTime()->Unit(benchmark::kMillisecond);

// The cache file lives in the temp dir for the program's lifetime.
struct CacheFile {
  CacheFile() {
    path = TempPath(".xmlb");
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
