// The global model of a merge on GPUs, where the GPUs hold it; see device_global_model.h.
#include "merge/gpu/device_global_model.h"

#include <stdexcept>
#include <utility>

#include "kernels/cuda/cuda_check.h"
#include "merge/gpu/replica_kernels.h"

namespace xmlt::merge::gpu {

using kernels::cuda::DeviceBuffer;
using kernels::cuda::DeviceGuard;
using kernels::cuda::PinnedBuffer;

DeviceGlobalModel::DeviceGlobalModel(std::string owner, std::vector<Layout> gpus, std::string noun)
    : owner_(std::move(owner)), noun_(std::move(noun)) {
  for (Layout& layout : gpus) {
    Gpu& gpu = gpus_.emplace_back();
    DeviceGuard guard(layout.ordinal);
    gpu.non_finite = DeviceBuffer<unsigned long long>(1);
    gpu.non_finite_host = PinnedBuffer<unsigned long long>(1);
    gpu.layout = std::move(layout);
  }
}

void DeviceGlobalModel::Allocate() {
  for (Gpu& gpu : gpus_) {
    if (gpu.current.size() == gpu.layout.size) continue;
    DeviceGuard guard(gpu.layout.ordinal);
    gpu.current = DeviceBuffer<float>(gpu.layout.size);
    gpu.previous = DeviceBuffer<float>(gpu.layout.size);
  }
}

void DeviceGlobalModel::Upload(const float* current, const float* previous) {
  Allocate();
  for (Gpu& gpu : gpus_) {
    DeviceGuard guard(gpu.layout.ordinal);
    for (const Part& part : gpu.layout.parts) {
      if (part.size == 0) continue;
      const size_t bytes = part.size * sizeof(float);
      XMLT_CUDA_CHECK(cudaMemcpy(gpu.current.data() + part.device, current + part.host, bytes, cudaMemcpyHostToDevice));
      XMLT_CUDA_CHECK(
          cudaMemcpy(gpu.previous.data() + part.device, previous + part.host, bytes, cudaMemcpyHostToDevice));
    }
  }
  set_ = true;
}

void DeviceGlobalModel::CheckSet() const {
  if (!set_) throw std::logic_error(owner_ + ": no " + noun_ + " was set");
}

void DeviceGlobalModel::CheckSetBefore(const std::string& step) const {
  if (!set_) throw std::logic_error(owner_ + ": " + step + " needs SetGlobalModel first");
}

void DeviceGlobalModel::Download(float* current, float* previous) const {
  CheckSet();
  for (const Gpu& gpu : gpus_) {
    DeviceGuard guard(gpu.layout.ordinal);
    for (const Part& part : gpu.layout.parts) {
      if (part.size == 0 || !part.download) continue;
      const size_t bytes = part.size * sizeof(float);
      XMLT_CUDA_CHECK(cudaMemcpy(current + part.host, gpu.current.data() + part.device, bytes, cudaMemcpyDeviceToHost));
      XMLT_CUDA_CHECK(
          cudaMemcpy(previous + part.host, gpu.previous.data() + part.device, bytes, cudaMemcpyDeviceToHost));
    }
  }
}

unsigned long long DeviceGlobalModel::CountNonFinite(const std::vector<cudaStream_t>& streams) {
  CheckSet();
  // Every GPU's count enqueued before any is waited for, so the GPUs count side by side.
  for (size_t g = 0; g < gpus_.size(); ++g) {
    Gpu& gpu = gpus_[g];
    if (gpu.layout.checked.empty()) continue;
    DeviceGuard guard(gpu.layout.ordinal);
    const cudaStream_t stream = streams[g];
    XMLT_CUDA_CHECK(cudaMemsetAsync(gpu.non_finite.data(), 0, sizeof(unsigned long long), stream));
    for (const Span& span : gpu.layout.checked)
      LaunchCountNonFinite(stream, gpu.current.data() + span.offset, span.size, gpu.non_finite.data());
    XMLT_CUDA_CHECK(cudaMemcpyAsync(gpu.non_finite_host.data(), gpu.non_finite.data(), sizeof(unsigned long long),
                                    cudaMemcpyDeviceToHost, stream));
  }
  unsigned long long non_finite = 0;
  for (size_t g = 0; g < gpus_.size(); ++g) {
    if (gpus_[g].layout.checked.empty()) continue;
    XMLT_CUDA_CHECK(cudaStreamSynchronize(streams[g]));
    non_finite += gpus_[g].non_finite_host.data()[0];
  }
  return non_finite;
}

}  // namespace xmlt::merge::gpu
