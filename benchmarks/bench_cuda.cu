// GPU benchmarks (run by scripts/gpu-check.sh on a machine with a GPU): training samples/s of one
// and of four logical devices sharing the GPU on generated data with the paper's Table 1 shapes,
// and, in the same run, the card's measured SGEMM rate and device-to-device copy bandwidth, so
// that each step can be reported as a fraction of those physical limits. And the merge of 4 and 8
// Amazon-670K replicas by the ring all-reduce, against the copy floor of the GPUs' measured peer
// copy rate: the measurement that replaces docs/BENCHMARKS.md's projection.
#include <benchmark/benchmark.h>
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <numeric>
#include <random>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "data/row_normalization.h"
#include "data/synthetic_generator.h"
#include "engine/device.h"
#include "kernels/cuda/cuda_mlp.h"
#include "kernels/cuda/device_buffer.h"
#include "kernels/model.h"
#include "merge/gpu/device_adasum.h"
#include "merge/gpu/ring_all_reduce.h"

namespace {

using namespace xmlt;

void Check(cudaError_t status, const char* what) {
  if (status != cudaSuccess) throw std::runtime_error(std::string(what) + ": " + cudaGetErrorString(status));
}

bool HaveGpu() {
  int count = 0;
  return cudaGetDeviceCount(&count) == cudaSuccess && count > 0;
}

const data::Dataset& Generated(const std::string& preset) {
  static std::map<std::string, data::Dataset> cache;
  auto it = cache.find(preset);
  if (it == cache.end()) {
    data::GeneratorConfig config = data::PresetConfig(preset, 1.0);
    config.train_rows = 65536;  // enough distinct batches; the shapes (D, L, nnz) are the full ones
    config.test_rows = 1;
    it = cache.emplace(preset, data::NormalizeRowsL2(data::Generate(config).train)).first;
  }
  return it->second;
}

// Args: batch, logical devices on GPU 0, and the step's storage: 0 fp32 products and plain SGD
// (the first figures); 1 bf16 products with heavy ball, fp32 weights and state; 2 the same with
// the weights and state in bf16 (--weights bf16 --optimizer-state bf16), whose time over 1's is
// what the bf16 storage costs (the widened blocks, the rounding). Reports samples/s per logical
// device and in total.
void CudaTrain(benchmark::State& state, const std::string& preset) {
  if (!HaveGpu()) {
    state.SkipWithError("no CUDA device");
    return;
  }
  const data::Dataset& train = Generated(preset);
  const uint32_t batch = uint32_t(state.range(0));
  const int devices = int(state.range(1));
  const int storage = int(state.range(2));
  using kernels::cuda::StateFormat;
  const StateFormat format = storage == 2 ? StateFormat::kBf16 : StateFormat::kFp32;
  const kernels::cuda::Math math = storage == 0 ? kernels::cuda::Math::kFp32 : kernels::cuda::Math::kBf16;
  const float momentum = storage == 0 ? 0.0f : 0.9f;
  state.SetLabel(storage == 0 ? "fp32, SGD" : storage == 1 ? "bf16 products, fp32 storage" : "bf16 storage");
  const kernels::ModelShape shape{train.num_features(), {128}, train.num_labels()};
  const kernels::Model<float> initial = kernels::InitModel<float>(shape, 1);
  const engine::DeviceLimits limits = engine::LimitsFor(train, batch);
  std::vector<std::unique_ptr<kernels::cuda::CudaMlp>> mlps;
  std::vector<data::SparseBatch> batches(devices);
  for (int d = 0; d < devices; ++d) {
    mlps.push_back(std::make_unique<kernels::cuda::CudaMlp>(0, shape, batch, limits.max_feature_nnz,
                                                            limits.max_label_nnz, math, kernels::cuda::kMaxWarpTopK,
                                                            format, format));
    mlps.back()->UploadParams(initial.params.data(), initial.params.size());
  }
  std::vector<uint64_t> order(train.num_rows());
  std::iota(order.begin(), order.end(), 0);
  std::shuffle(order.begin(), order.end(), std::mt19937_64(1));
  size_t cursor = 0;
  constexpr int kStepsPerIteration = 10;
  for (auto _ : state) {
    std::vector<std::thread> threads;
    for (int d = 0; d < devices; ++d) {
      if (cursor + size_t(batch) * kStepsPerIteration > order.size()) cursor = 0;
      const uint64_t* rows = order.data() + cursor;
      cursor += size_t(batch) * kStepsPerIteration;
      threads.emplace_back([&, d, rows] {
        for (int s = 0; s < kStepsPerIteration; ++s) {
          data::GatherBatch(train, rows + size_t(s) * batch, batch, &batches[d]);
          kernels::cuda::CudaStepSettings settings;
          settings.rounding_key = uint32_t(s + 1);
          settings.weights_rounding_key = uint32_t(s + 7);
          mlps[d]->TrainBatch(batches[d], 0.1f, momentum, settings);
        }
      });
    }
    for (std::thread& t : threads) t.join();
  }
  const double samples = double(state.iterations()) * kStepsPerIteration * batch;
  state.counters["samples_per_s"] = benchmark::Counter(samples * devices, benchmark::Counter::kIsRate);
  state.counters["samples_per_s_per_device"] = benchmark::Counter(samples, benchmark::Counter::kIsRate);
  // FLOPs of one step's output layer: three GEMMs of batch x hidden x labels.
  state.counters["output_gflop_per_step"] = 3.0 * 2.0 * batch * 128.0 * double(train.num_labels()) / 1e9;
}

// The card's GEMM rate on a large square product of fp32 matrices, by compute type (arg 0: fp32,
// 1: TF32 tensor cores, 2: bf16 tensor cores, as --math fp32/tf32/bf16). The operands hold random
// values: a card's power management clocks down less on zeros, which would overstate the peak.
void CudaGemmRate(benchmark::State& state) {
  if (!HaveGpu()) {
    state.SkipWithError("no CUDA device");
    return;
  }
  const int n = 8192;
  const cublasComputeType_t compute = state.range(0) == 1   ? CUBLAS_COMPUTE_32F_FAST_TF32
                                      : state.range(0) == 2 ? CUBLAS_COMPUTE_32F_FAST_16BF
                                                            : CUBLAS_COMPUTE_32F;
  state.SetLabel(state.range(0) == 1 ? "tf32" : state.range(0) == 2 ? "bf16" : "fp32");
  float *a, *b, *c;
  Check(cudaMalloc(&a, sizeof(float) * n * n), "cudaMalloc");
  Check(cudaMalloc(&b, sizeof(float) * n * n), "cudaMalloc");
  Check(cudaMalloc(&c, sizeof(float) * n * n), "cudaMalloc");
  {
    std::vector<float> values(size_t(n) * n);
    std::mt19937 random(1);
    std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
    for (float* matrix : {a, b}) {
      for (float& v : values) v = uniform(random);
      Check(cudaMemcpy(matrix, values.data(), sizeof(float) * values.size(), cudaMemcpyHostToDevice), "cudaMemcpy");
    }
  }
  cublasHandle_t handle;
  cublasCreate(&handle);
  const float one = 1, zero = 0;
  cudaEvent_t start, stop;
  cudaEventCreate(&start);
  cudaEventCreate(&stop);
  for (auto _ : state) {
    cudaEventRecord(start);
    cublasGemmEx(handle, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &one, a, CUDA_R_32F, n, b, CUDA_R_32F, n, &zero, c,
                 CUDA_R_32F, n, compute, CUBLAS_GEMM_DEFAULT);
    cudaEventRecord(stop);
    cudaEventSynchronize(stop);
    float ms = 0;
    cudaEventElapsedTime(&ms, start, stop);
    state.SetIterationTime(ms / 1e3);
  }
  state.counters["tflops"] =
      benchmark::Counter(2.0 * n * n * double(n) * state.iterations() / 1e12, benchmark::Counter::kIsRate);
  cublasDestroy(handle);
  cudaFree(a);
  cudaFree(b);
  cudaFree(c);
}

// Device-to-device copy bandwidth (bytes read + written per second), the floor for merges.
void CudaCopyBandwidth(benchmark::State& state) {
  if (!HaveGpu()) {
    state.SkipWithError("no CUDA device");
    return;
  }
  const size_t bytes = size_t{1} << 30;
  void *src, *dst;
  Check(cudaMalloc(&src, bytes), "cudaMalloc");
  Check(cudaMalloc(&dst, bytes), "cudaMalloc");
  cudaEvent_t start, stop;
  cudaEventCreate(&start);
  cudaEventCreate(&stop);
  for (auto _ : state) {
    cudaEventRecord(start);
    cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice);
    cudaEventRecord(stop);
    cudaEventSynchronize(stop);
    float ms = 0;
    cudaEventElapsedTime(&ms, start, stop);
    state.SetIterationTime(ms / 1e3);
  }
  state.counters["copy_GBps"] =
      benchmark::Counter(2.0 * double(bytes) * state.iterations() / 1e9, benchmark::Counter::kIsRate);
  cudaFree(src);
  cudaFree(dst);
}

// One GPU's copy rate to another, in GB/s one way (peer access enabled where the GPUs allow it):
// the link the merge's copy floor is computed from.
double PeerCopyGBps(int from, int to) {
  const size_t bytes = size_t{1} << 30;
  void *src, *dst;
  {
    kernels::cuda::DeviceGuard guard(from);
    Check(cudaMalloc(&src, bytes), "cudaMalloc");
  }
  kernels::cuda::DeviceGuard guard(to);
  Check(cudaMalloc(&dst, bytes), "cudaMalloc");
  int can = 0;
  Check(cudaDeviceCanAccessPeer(&can, to, from), "cudaDeviceCanAccessPeer");
  if (can && cudaDeviceEnablePeerAccess(from, 0) != cudaSuccess) cudaGetLastError();  // already enabled
  double best = 0;
  for (int i = 0; i < 4; ++i) {  // the first copy pays for setting up the path
    Check(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
    const auto start = std::chrono::steady_clock::now();
    Check(cudaMemcpyPeerAsync(dst, to, src, from, bytes, nullptr), "cudaMemcpyPeerAsync");
    Check(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    best = std::max(best, double(bytes) / seconds / 1e9);
  }
  cudaFree(dst);
  {
    kernels::cuda::DeviceGuard from_guard(from);
    cudaFree(src);
  }
  return best;
}

// `replicas` zeroed model-sized buffers dealt round-robin over the first `gpus` GPUs (replica i on
// GPU i % gpus), kept in `buffers`; returns where each one is.
std::vector<base::ReplicaParams> ZeroReplicas(int replicas, int gpus, size_t count,
                                              std::vector<kernels::cuda::DeviceBuffer<float>>* buffers) {
  std::vector<base::ReplicaParams> view;
  for (int i = 0; i < replicas; ++i) {
    kernels::cuda::DeviceGuard guard(i % gpus);
    buffers->emplace_back(count);
    Check(cudaMemset(buffers->back().data(), 0, count * sizeof(float)), "cudaMemset");
    view.push_back({buffers->back().data(), i % gpus});
  }
  return view;
}

// Args: replicas, partitions (0: one per GPU). The weighted all-reduce of that many replicas of the
// Amazon-670K model (135,909-128-670,091, the trainer's default hidden size) by RingAllReduce, one
// replica per GPU while there are GPUs enough, round robin otherwise (logical devices). Reports
// the merge's time; with two GPUs or more, busbw = 2(N-1)/N * bytes / time (nccl-tests' bus
// bandwidth) against the measured peer copy rate, whose ratio is the fraction of the copy floor.
void CudaMerge(benchmark::State& state) {
  if (!HaveGpu()) {
    state.SkipWithError("no CUDA device");
    return;
  }
  const int replicas = int(state.range(0));
  const size_t partitions = size_t(state.range(1));
  int available = 0;
  Check(cudaGetDeviceCount(&available), "cudaGetDeviceCount");
  const int gpus = std::min(available, replicas);
  const kernels::ModelShape shape{135909, {128}, 670091};
  const size_t count = shape.NumParameters();
  const double bytes = double(count) * sizeof(float);
  std::vector<kernels::cuda::DeviceBuffer<float>> buffers;
  const std::vector<base::ReplicaParams> view = ZeroReplicas(replicas, gpus, count, &buffers);
  const double peer_gbps = gpus > 1 ? PeerCopyGBps(1, 0) : 0;
  merge::gpu::RingAllReduce ring(view, count, partitions);
  const std::vector<double> weights(size_t(replicas), 1.0 / replicas);
  ring.WeightedAllReduce(weights);  // warm-up: peer paths, first launches
  double total = 0;
  for (auto _ : state) {
    const auto start = std::chrono::steady_clock::now();
    ring.WeightedAllReduce(weights);  // returns once every replica holds the sum
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    state.SetIterationTime(seconds);
    total += seconds;
  }
  const double mean = total / double(state.iterations());
  state.counters["gpus"] = gpus;
  state.counters["model_MB"] = bytes / 1e6;
  state.counters["merge_ms"] = mean * 1e3;
  if (gpus > 1) {
    const double factor = 2.0 * (gpus - 1) / gpus;
    state.counters["busbw_GBps"] = factor * bytes / mean / 1e9;
    state.counters["peer_copy_GBps"] = peer_gbps;
    state.counters["copy_floor_ms"] = factor * bytes / (peer_gbps * 1e9) * 1e3;
    state.counters["floor_fraction"] = factor * bytes / (peer_gbps * 1e9) / mean;
  }
}

// Args: replicas. The Adasum merge (DeviceAdasum: the deltas, the reduce-scatter by vector halving,
// the gather, the update of w and w_p) of that many Amazon-670K replicas, placed as CudaMerge
// places them, per tensor of the model; then, in the same run, RingAllReduce's plain weighted sum
// of the same replicas. adasum_over_ring is the ratio that docs/BENCHMARKS.md projects (goal:
// 1.3 or less). The replicas hold zeros: Adasum reads and writes as much whatever the values.
void CudaMergeAdasum(benchmark::State& state) {
  if (!HaveGpu()) {
    state.SkipWithError("no CUDA device");
    return;
  }
  const int replicas = int(state.range(0));
  int available = 0;
  Check(cudaGetDeviceCount(&available), "cudaGetDeviceCount");
  const int gpus = std::min(available, replicas);
  const kernels::ModelShape shape{135909, {128}, 670091};
  const size_t count = shape.NumParameters();
  std::vector<size_t> tensors;
  for (const kernels::LayerView& layer : kernels::LayoutOf(shape))
    for (const kernels::TensorView& t : {layer.weight, layer.bias}) tensors.push_back(t.offset);
  std::sort(tensors.begin(), tensors.end());
  std::vector<kernels::cuda::DeviceBuffer<float>> buffers;
  const std::vector<base::ReplicaParams> view = ZeroReplicas(replicas, gpus, count, &buffers);
  merge::gpu::DeviceAdasum adasum(view, count, tensors, merge::gpu::DeviceMomentum{0.9, false});
  const std::vector<float> zeros(count, 0.0f);
  adasum.SetGlobalModel(zeros.data(), zeros.data());
  adasum.Merge();  // warm-up: peer paths, first launches
  double total = 0;
  for (auto _ : state) {
    const auto start = std::chrono::steady_clock::now();
    adasum.Merge();  // returns once every replica holds the next start
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    state.SetIterationTime(seconds);
    total += seconds;
  }
  const double mean = total / double(state.iterations());
  merge::gpu::RingAllReduce ring(view, count, 0);
  const std::vector<double> weights(size_t(replicas), 1.0 / replicas);
  ring.WeightedAllReduce(weights);  // warm-up
  double ring_total = 0;
  const int ring_runs = 5;
  for (int r = 0; r < ring_runs; ++r) {
    const auto start = std::chrono::steady_clock::now();
    ring.WeightedAllReduce(weights);
    ring_total += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  }
  state.counters["gpus"] = gpus;
  state.counters["merge_ms"] = mean * 1e3;
  state.counters["ring_ms"] = ring_total / ring_runs * 1e3;
  state.counters["adasum_over_ring"] = mean / (ring_total / ring_runs);
}

BENCHMARK(CudaGemmRate)->Arg(0)->Arg(1)->Arg(2)->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK(CudaCopyBandwidth)->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK(CudaMerge)->Args({4, 0})->Args({8, 0})->Args({8, 1})->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK(CudaMergeAdasum)->Arg(4)->Arg(8)->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(CudaTrain, amazon670k, std::string("amazon670k"))
    ->Args({256, 1, 0})->Args({256, 4, 0})->Args({1024, 1, 0})->Args({256, 1, 1})->Args({256, 1, 2})
    ->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(CudaTrain, delicious200k, std::string("delicious200k"))
    ->Args({256, 1, 0})->Args({256, 4, 0})->Args({256, 1, 1})->Args({256, 1, 2})
    ->UseRealTime()->Unit(benchmark::kMillisecond);

}  // namespace
