// What the host reads of the NCCL merge (nccl_all_reduce.h): the global model, whether it is
// finite, and the replicas' norms; and the global model it writes. Across processes these go
// through NCCL too, so that every process gets the same bits.
#include <cuda_runtime.h>
#include <nccl.h>

#include <utility>
#include <vector>

#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/device_buffer.h"
#include "merge/gpu/device_global_model.h"
#include "merge/gpu/nccl_all_reduce.h"
#include "merge/gpu/nccl_merge_state.h"
#include "merge/gpu/replica_kernels.h"

namespace xmlt::merge::gpu {

using kernels::cuda::DeviceBuffer;
using kernels::cuda::DeviceGuard;

void NcclAllReduce::SetGlobalModel(const float* current, const float* previous) {
  state_->CheckUsable("SetGlobalModel");
  state_->global.Upload(current, previous);
}

// Across processes: each of w and w_p all-gathered on every GPU (into its accumulator, or a buffer
// made for the call), then copied down from this process's first GPU, with the tail, which every
// GPU holds.
void NcclMergeState::GatherGlobal(float* current, float* previous) {
  std::vector<DeviceBuffer<float>> made(gpus.size());
  std::vector<float*> into(gpus.size());
  for (size_t g = 0; g < gpus.size(); ++g) {
    DeviceGuard guard(gpus[g].ordinal);
    if (gpus[g].acc.size() >= main) {
      into[g] = gpus[g].acc.data();
    } else {
      made[g] = DeviceBuffer<float>(main);
      into[g] = made[g].data();
    }
  }
  for (const auto& host_and_which :
       {std::pair{current, &DeviceGlobalModel::current}, std::pair{previous, &DeviceGlobalModel::previous}}) {
    float* const host = host_and_which.first;
    const auto which = host_and_which.second;
    if (shard > 0)
      Grouped([&] {
        for (size_t g = 0; g < gpus.size(); ++g)
          XMLT_NCCL_CHECK(ncclAllGather((global.*which)(g), into[g], shard, ncclFloat32, gpus[g].comm,
                                        gpus[g].stream->get()));
      });
    Gpu& first = gpus[0];
    DeviceGuard guard(first.ordinal);
    if (shard > 0)
      XMLT_CUDA_CHECK(
          cudaMemcpyAsync(host, into[0], main * sizeof(float), cudaMemcpyDeviceToHost, first.stream->get()));
    if (tail > 0)
      XMLT_CUDA_CHECK(cudaMemcpyAsync(host + main, (global.*which)(0) + shard, tail * sizeof(float),
                                      cudaMemcpyDeviceToHost, first.stream->get()));
    Finish();
  }
}

void NcclAllReduce::GetGlobalModel(float* current, float* previous) {
  state_->global.CheckSet();  // here, not in Download: across processes the model is gathered
  state_->CheckUsable("GetGlobalModel");
  if (state_->across_processes) {
    state_->GatherGlobal(current, previous);
  } else {
    state_->global.Download(current, previous);
  }
}

bool NcclAllReduce::GlobalModelFinite() {
  NcclMergeState& m = *state_;
  m.global.CheckSet();
  m.CheckUsable("GlobalModelFinite");
  std::vector<cudaStream_t> streams;
  for (NcclMergeState::Gpu& gpu : m.gpus) streams.push_back(gpu.stream->get());
  const double non_finite = double(m.global.CountNonFinite(streams));
  if (!m.across_processes) return non_finite == 0;
  // The other processes' counts: summed by NCCL, in one double on each GPU (its norms' scratch).
  std::vector<double*> slot;
  for (NcclMergeState::Gpu& gpu : m.gpus) {
    DeviceGuard guard(gpu.ordinal);
    const double mine = &gpu == &m.gpus[0] ? non_finite : 0.0;
    XMLT_CUDA_CHECK(cudaMemcpy(gpu.partial.data(), &mine, sizeof(double), cudaMemcpyHostToDevice));
    slot.push_back(gpu.partial.data());
  }
  m.SumDoubles(slot, 1);
  double total = 0;
  DeviceGuard guard(m.gpus[0].ordinal);
  XMLT_CUDA_CHECK(cudaMemcpyAsync(&total, slot[0], sizeof(double), cudaMemcpyDeviceToHost, m.gpus[0].stream->get()));
  m.Finish();
  return total == 0;
}

std::vector<double> NcclAllReduce::SquaredNorms() {
  NcclMergeState& m = *state_;
  m.CheckUsable("SquaredNorms");
  std::vector<double> norms(m.replicas.size(), 0.0);
  if (m.count == 0) return norms;
  // Each replica's norm in its own slot; across processes the slots of the others' replicas are
  // zeros, and NCCL's sum of the slots gives every process every norm (x + 0 is exact).
  const size_t n = m.replicas.size();
  std::vector<double*> slots;
  for (NcclMergeState::Gpu& gpu : m.gpus) {
    DeviceGuard guard(gpu.ordinal);
    const cudaStream_t stream = gpu.stream->get();
    double* slot = gpu.partial.data() + kSquaresScratch;
    if (m.across_processes) XMLT_CUDA_CHECK(cudaMemsetAsync(slot, 0, n * sizeof(double), stream));
    for (const size_t i : gpu.replicas)
      LaunchSquaredNorm(stream, m.replicas[i].params, m.count, gpu.partial.data(), slot + i);
    slots.push_back(slot);
  }
  // Only the norms reach the host: every slot from the first GPU across processes, each GPU's own
  // replicas' slots here.
  if (m.across_processes) m.SumDoubles(slots, n);
  for (size_t g = 0; g < m.gpus.size(); ++g) {
    NcclMergeState::Gpu& gpu = m.gpus[g];
    DeviceGuard guard(gpu.ordinal);
    if (m.across_processes && g == 0)
      XMLT_CUDA_CHECK(cudaMemcpyAsync(gpu.norms.data(), slots[g], n * sizeof(double), cudaMemcpyDeviceToHost,
                                      gpu.stream->get()));
    if (!m.across_processes)
      for (const size_t i : gpu.replicas)
        XMLT_CUDA_CHECK(cudaMemcpyAsync(gpu.norms.data() + i, slots[g] + i, sizeof(double), cudaMemcpyDeviceToHost,
                                        gpu.stream->get()));
  }
  m.Finish();
  for (NcclMergeState::Gpu& gpu : m.gpus) {
    if (m.across_processes) {
      for (size_t i = 0; i < n; ++i) norms[i] = m.gpus[0].norms.data()[i];
    } else {
      for (const size_t i : gpu.replicas) norms[i] = gpu.norms.data()[i];
    }
  }
  return norms;
}

}  // namespace xmlt::merge::gpu
