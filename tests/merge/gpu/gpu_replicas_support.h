// What the tests of the merges on GPUs share: replicas kept on both sides (host vectors for the
// host reference, device buffers for the GPU code), the layouts of replicas over GPUs, random
// weights, and how many GPUs to use.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <random>
#include <vector>

#include "base/replica_params.h"
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/device_buffer.h"
#include "kernels/cuda/device_count.h"

namespace xmlt::merge::gpu::testing {

// Up to 8 of this machine's (or the simulator's) GPUs.
inline int Gpus() { return std::min(kernels::cuda::CudaDeviceCountOrZero(), 8); }

// The fewest GPUs a layout of the grids below spans: XMLT_TEST_FEWEST_GPUS, or 1. The simulated
// build runs these grids again on 8 GPUs and on 4 that refuse peer access (tests/CMakeLists.txt);
// those runs are there for what only more GPUs, or staged copies, exercise, and start at 3 and 2
// GPUs: the smaller layouts are the default run's, which would only be repeated at the checks' cost.
inline int FewestGpus() {
  const char* v = std::getenv("XMLT_TEST_FEWEST_GPUS");
  return v != nullptr && std::atoi(v) > 1 ? std::atoi(v) : 1;
}

// Each GPU of `gpus` holding `per_gpu` replicas, or (per_gpu 0) the GPUs interleaved: 0, 1, ..., 0.
inline std::vector<int> Layout(int gpus, int per_gpu) {
  std::vector<int> layout;
  if (per_gpu == 0) {
    for (int g = 0; g < gpus; ++g) layout.push_back(g);
    layout.push_back(0);
    return layout;
  }
  for (int g = 0; g < gpus; ++g)
    for (int r = 0; r < per_gpu; ++r) layout.push_back(g);
  return layout;
}

inline std::vector<float> Normal(size_t count, std::mt19937_64& rng, float sigma) {
  std::normal_distribution<float> normal(0.0f, sigma);
  std::vector<float> v(count);
  for (float& x : v) x = normal(rng);
  return v;
}

inline std::vector<double> RandomWeights(size_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> uniform(0.1, 1.5);
  std::vector<double> w(n);
  for (double& x : w) x = uniform(rng);
  return w;
}

// The same replicas on the host and on their GPUs.
struct TwinReplicas {
  std::vector<int> gpus;
  std::vector<std::vector<float>> host;
  std::vector<kernels::cuda::DeviceBuffer<float>> device;

  TwinReplicas(std::vector<int> gpu_of, std::vector<std::vector<float>> values)
      : gpus(std::move(gpu_of)), host(std::move(values)) {
    for (size_t i = 0; i < gpus.size(); ++i) {
      kernels::cuda::DeviceGuard guard(gpus[i]);
      device.push_back(kernels::cuda::DeviceBuffer<float>::FromHost(host[i]));
    }
  }
  // Normal values of standard deviation `sigma`.
  TwinReplicas(std::vector<int> gpu_of, size_t count, uint64_t seed, float sigma = 1.0f)
      : TwinReplicas(gpu_of, Draw(gpu_of.size(), count, seed, sigma)) {}

  std::vector<base::ReplicaParams> View() {
    std::vector<base::ReplicaParams> view;
    for (size_t i = 0; i < gpus.size(); ++i) view.push_back({device[i].data(), gpus[i]});
    return view;
  }
  std::vector<float> Read(size_t i) const {
    kernels::cuda::DeviceGuard guard(gpus[i]);
    return device[i].ToHost();
  }
  // Replica i becomes `values` on both sides.
  void Write(size_t i, const std::vector<float>& values) {
    host[i] = values;
    kernels::cuda::DeviceGuard guard(gpus[i]);
    if (!values.empty())
      XMLT_CUDA_CHECK(
          cudaMemcpy(device[i].data(), values.data(), values.size() * sizeof(float), cudaMemcpyHostToDevice));
  }
  // Replica i moved as training would move it, the same on both sides.
  void Move(size_t i, std::mt19937_64& rng, float sigma) {
    std::vector<float> moved = host[i];
    const std::vector<float> step = Normal(moved.size(), rng, sigma);
    for (size_t j = 0; j < step.size(); ++j) moved[j] += step[j];
    Write(i, moved);
  }

 private:
  static std::vector<std::vector<float>> Draw(size_t n, size_t count, uint64_t seed, float sigma) {
    std::mt19937_64 rng(seed);
    std::vector<std::vector<float>> values;
    for (size_t i = 0; i < n; ++i) values.push_back(Normal(count, rng, sigma));
    return values;
  }
};

}  // namespace xmlt::merge::gpu::testing
