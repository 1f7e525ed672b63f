// Checkpoint cost against the storage's own limit: writing a checkpoint (hash + temporary file +
// fsync + rename) against writing the same bytes with fsync and nothing else, and loading one
// (read + checksum + layout checks) against reading the file. The ratios tell the container's
// overhead; the absolute rates are the disk's. Sizes: 64 and 256 MiB of parameters.
#include <benchmark/benchmark.h>
#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <vector>

#include "run/checkpoint_file.h"

namespace {

std::string BenchDir() {
  const auto dir = std::filesystem::temp_directory_path() / ("xmlt-bench-checkpoint-" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  return dir.string();
}

std::vector<float> Params(int64_t mib) {
  std::vector<float> params(size_t(mib) << 18);
  for (size_t i = 0; i < params.size(); ++i) params[i] = float(i % 1000) * 1e-3f;
  return params;
}

void BM_CheckpointWrite(benchmark::State& state) {
  const std::string dir = BenchDir();
  const std::vector<float> params = Params(state.range(0));
  for (auto _ : state) {
    xmlt::run::CheckpointWriter writer("{}");
    writer.Add("params", params);
    writer.Write(dir);
  }
  state.SetBytesProcessed(int64_t(state.iterations()) * int64_t(params.size() * sizeof(float)));
  std::filesystem::remove_all(dir);
}

// The floor: the same bytes, one write and one fsync.
void BM_PlainWriteWithFsync(benchmark::State& state) {
  const std::string dir = BenchDir();
  const std::vector<float> params = Params(state.range(0));
  const std::string path = dir + "/plain";
  for (auto _ : state) {
    std::FILE* file = std::fopen(path.c_str(), "wb");
    std::fwrite(params.data(), sizeof(float), params.size(), file);
    std::fflush(file);
    fsync(fileno(file));
    std::fclose(file);
  }
  state.SetBytesProcessed(int64_t(state.iterations()) * int64_t(params.size() * sizeof(float)));
  std::filesystem::remove_all(dir);
}

void BM_CheckpointLoad(benchmark::State& state) {
  const std::string dir = BenchDir();
  const std::vector<float> params = Params(state.range(0));
  xmlt::run::CheckpointWriter writer("{}");
  writer.Add("params", params);
  writer.Write(dir);
  std::vector<float> loaded(params.size());  // as the training loops do: into the replica's memory
  for (auto _ : state) {
    const auto reader = xmlt::run::CheckpointReader::Open(dir);
    reader.ReadInto("params", loaded.data(), loaded.size());
    benchmark::DoNotOptimize(loaded.data());
  }
  state.SetBytesProcessed(int64_t(state.iterations()) * int64_t(params.size() * sizeof(float)));
  std::filesystem::remove_all(dir);
}

// The floor: reading the file into memory once (from the page cache, as the load above does).
void BM_PlainRead(benchmark::State& state) {
  const std::string dir = BenchDir();
  const std::vector<float> params = Params(state.range(0));
  xmlt::run::CheckpointWriter writer("{}");
  writer.Add("params", params);
  writer.Write(dir);
  const std::string path = xmlt::run::CheckpointPath(dir);
  for (auto _ : state) {
    std::ifstream in(path, std::ios::binary | std::ios::ate);
    std::vector<char> bytes(size_t(in.tellg()));
    in.seekg(0);
    in.read(bytes.data(), std::streamsize(bytes.size()));
    benchmark::DoNotOptimize(bytes.data());
  }
  state.SetBytesProcessed(int64_t(state.iterations()) * int64_t(params.size() * sizeof(float)));
  std::filesystem::remove_all(dir);
}

BENCHMARK(BM_CheckpointWrite)->Arg(64)->Arg(256)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_PlainWriteWithFsync)->Arg(64)->Arg(256)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_CheckpointLoad)->Arg(64)->Arg(256)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_PlainRead)->Arg(64)->Arg(256)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace
