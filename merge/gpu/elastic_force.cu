// The elastic force merge on the GPUs; see elastic_force.h.
#include "merge/gpu/elastic_force.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <stdexcept>
#include <string>

#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/device_buffer.h"
#include "kernels/cuda/launch.h"
#include "merge/gpu/device_global_model.h"
#include "merge/gpu/replica_kernels.h"
#include "merge/gpu/ring_all_reduce.h"

namespace xmlt::merge::gpu {

using kernels::cuda::DeviceBuffer;
using kernels::cuda::DeviceGuard;
using kernels::cuda::Stream;

namespace {

constexpr unsigned kThreads = 256;

unsigned BlocksFor(size_t count) { return unsigned(std::clamp<size_t>((count + kThreads - 1) / kThreads, 1, 4096)); }

// c = a (z - x); z -= c; pulls += c (pulls starts at 0 for a GPU's first replica).
__global__ void __launch_bounds__(kThreads)
    PullKernel(float* z, const float* x, float* pulls, size_t n, float a, bool first) {
  for (size_t j = size_t(blockIdx.x) * blockDim.x + threadIdx.x; j < n; j += size_t(gridDim.x) * blockDim.x) {
    const float c = a * (z[j] - x[j]);
    z[j] -= c;
    pulls[j] = (first ? 0.0f : pulls[j]) + c;
  }
}

// x <- x + pulls + gamma (x - x_prev); x_prev <- the old x.
__global__ void __launch_bounds__(kThreads)
    CenterKernel(float* x, float* x_prev, const float* pulls, size_t n, float gamma) {
  for (size_t j = size_t(blockIdx.x) * blockDim.x + threadIdx.x; j < n; j += size_t(gridDim.x) * blockDim.x) {
    const float old = x[j];
    x[j] = old + pulls[j] + gamma * (old - x_prev[j]);
    x_prev[j] = old;
  }
}

}  // namespace

struct DeviceElasticForce::Impl {
  struct Gpu {
    int ordinal = 0;
    std::vector<float*> replicas;
    DeviceBuffer<float> pulls;
    Stream stream;
  };
  size_t count = 0;
  float alpha = 0, gamma = 0;
  std::vector<Gpu> gpus;
  DeviceGlobalModel center;  // x and x_prev, whole on every GPU
  std::unique_ptr<RingAllReduce> ring;  // over the GPUs' pull sums
};

DeviceElasticForce::DeviceElasticForce(std::vector<base::ReplicaParams> replicas, size_t count, double alpha,
                                       double gamma)
    : impl_(std::make_unique<Impl>()) {
  if (replicas.empty()) throw std::invalid_argument("DeviceElasticForce: no replicas");
  if (!(alpha > 0.0 && alpha <= 1.0))
    throw std::invalid_argument("DeviceElasticForce: alpha must be in (0, 1], got " + std::to_string(alpha));
  Impl& m = *impl_;
  m.count = count;
  m.alpha = float(alpha);
  m.gamma = float(gamma);
  for (size_t i = 0; i < replicas.size(); ++i) {
    if (replicas[i].params == nullptr && count > 0)
      throw std::invalid_argument("DeviceElasticForce: replica " + std::to_string(i) + " has no parameters");
    auto it = std::find_if(m.gpus.begin(), m.gpus.end(),
                           [&](const Impl::Gpu& g) { return g.ordinal == replicas[i].gpu; });
    if (it == m.gpus.end()) {
      DeviceGuard guard(replicas[i].gpu);
      m.gpus.emplace_back();
      it = m.gpus.end() - 1;
      it->ordinal = replicas[i].gpu;
      it->pulls = DeviceBuffer<float>(count);
    }
    it->replicas.push_back(replicas[i].params);
  }
  // The copies of the center stay equal: the host's comes back from the first GPU, and the finite
  // check counts the first GPU's only.
  std::vector<DeviceGlobalModel::Layout> layouts;
  for (size_t g = 0; g < m.gpus.size(); ++g) {
    layouts.push_back({m.gpus[g].ordinal, count, {{0, 0, count, g == 0}}, {}});
    if (g == 0) layouts.back().checked.push_back({0, count});
  }
  m.center = DeviceGlobalModel("DeviceElasticForce", std::move(layouts), "center");
  m.center.Allocate();
  std::vector<base::ReplicaParams> sums;
  for (Impl::Gpu& gpu : m.gpus) sums.push_back({gpu.pulls.data(), gpu.ordinal});
  if (count > 0) m.ring = std::make_unique<RingAllReduce>(sums, count);
}

DeviceElasticForce::~DeviceElasticForce() = default;

void DeviceElasticForce::Merge() {
  Impl& m = *impl_;
  m.center.CheckSetBefore("the center");
  if (m.count == 0) return;
  for (size_t g = 0; g < m.gpus.size(); ++g) {
    Impl::Gpu& gpu = m.gpus[g];
    DeviceGuard guard(gpu.ordinal);
    for (size_t r = 0; r < gpu.replicas.size(); ++r) {
      XMLT_LAUNCH(PullKernel, BlocksFor(m.count), kThreads, 0, gpu.stream.get())(
          gpu.replicas[r], m.center.current(g), gpu.pulls.data(), m.count, m.alpha, r == 0);
      XMLT_CUDA_CHECK_LAUNCH();
    }
  }
  // The ring runs on its own streams: every GPU's pulls must be summed first.
  for (Impl::Gpu& gpu : m.gpus) gpu.stream.Synchronize();
  m.ring->WeightedSumToEveryGpu(std::vector<double>(m.gpus.size(), 1.0));
  for (size_t g = 0; g < m.gpus.size(); ++g) {
    Impl::Gpu& gpu = m.gpus[g];
    DeviceGuard guard(gpu.ordinal);
    XMLT_LAUNCH(CenterKernel, BlocksFor(m.count), kThreads, 0, gpu.stream.get())(
        m.center.current(g), m.center.previous(g), m.ring->Sum(gpu.ordinal), m.count, m.gamma);
    XMLT_CUDA_CHECK_LAUNCH();
  }
  for (Impl::Gpu& gpu : m.gpus) gpu.stream.Synchronize();
}

void DeviceElasticForce::SetGlobalModel(const float* current, const float* previous) {
  impl_->center.Upload(current, previous);
}

void DeviceElasticForce::GetGlobalModel(float* current, float* previous) {
  impl_->center.Download(current, previous);
}

bool DeviceElasticForce::GlobalModelFinite() {
  Impl& m = *impl_;
  std::vector<cudaStream_t> streams;
  for (Impl::Gpu& gpu : m.gpus) streams.push_back(gpu.stream.get());
  return m.center.CountNonFinite(streams) == 0;
}

}  // namespace xmlt::merge::gpu
