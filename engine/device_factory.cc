// The backend factory: the one place that decides which implementation serves a DeviceSpec.
#include <algorithm>
#include <functional>
#include <numeric>
#include <stdexcept>
#include <vector>

#include "engine/cpu_device.h"
#include "engine/device.h"
#include "engine/device_query.h"
#include "engine/sampled_cpu_device.h"
#include "engine/shortlist_scorer.h"
#ifdef XMLT_HAVE_CUDA
#include "engine/cuda_device.h"
#include "engine/cuda_shortlist_scorer.h"
#endif

namespace xmlt::engine {
namespace {

// The sum of the `count` largest row sizes of a CSR matrix.
uint64_t LargestRowsSum(const data::CsrMatrix& m, uint32_t count) {
  std::vector<uint64_t> sizes(m.num_rows);
  for (uint64_t r = 0; r < m.num_rows; ++r) sizes[r] = m.RowSize(r);
  const size_t k = std::min<size_t>(count, sizes.size());
  std::partial_sort(sizes.begin(), sizes.begin() + k, sizes.end(), std::greater<uint64_t>());
  return std::accumulate(sizes.begin(), sizes.begin() + k, uint64_t{0});
}

}  // namespace

DeviceLimits LimitsFor(const data::Dataset& dataset, uint32_t max_rows) {
  return {max_rows, LargestRowsSum(dataset.features, max_rows), LargestRowsSum(dataset.labels, max_rows)};
}

std::unique_ptr<Device> MakeDevice(const DeviceSpec& spec, const kernels::Model<float>& initial,
                                   const DeviceLimits& limits, float local_momentum,
                                   kernels::OutputMath math, const SampledOutputOptions& sampled,
                                   const StepSettings& step_settings) {
  // Checked here for every backend, before anything is allocated (the CUDA replica trusts it).
  if (!(local_momentum >= 0 && local_momentum < 1))
    throw std::invalid_argument("device " + spec.id + ": momentum " + std::to_string(local_momentum) +
                                " is not in [0, 1)");
  // Weight decay is the CPU dense step's alone; dropout and the first layer's Adagrad every step's.
  // The command line refuses the flags before this.
  if (step_settings.weight_decay != 0 && (spec.kind != DeviceKind::kCpu || sampled.enabled))
    throw std::invalid_argument("device " + spec.id + ": --weight-decay is implemented by the CPU devices' dense "
                                "step only, not by " +
                                (spec.kind != DeviceKind::kCpu ? "the CUDA backend" : "the sampled output layer"));
  if (spec.kind == DeviceKind::kCpu && sampled.enabled) {
    if (math != kernels::OutputMath::kFp32)
      throw std::invalid_argument("device " + spec.id + ": the sampled output layer computes in fp32, not --math " +
                                  kernels::OutputMathName(math));
    return MakeSampledCpuDevice(spec, initial, limits, local_momentum, sampled, step_settings);
  }
  if (spec.kind == DeviceKind::kCpu) {
    if (math == kernels::OutputMath::kTf32)
      throw std::invalid_argument("device " + spec.id + ": --math tf32 is for CUDA devices; a CPU computes in fp32 "
                                  "or bf16");
    return MakeCpuDevice(spec, initial, limits.max_rows, local_momentum, math, step_settings);
  }
  const int gpus = CudaDeviceCount();
  if (spec.ordinal >= gpus) {
    throw std::invalid_argument("device " + spec.id + " does not exist (" + CudaDeviceSummary() +
                                "); use --devices cpu:N");
  }
#ifdef XMLT_HAVE_CUDA
  return MakeCudaDevice(spec, initial, limits, local_momentum, math, step_settings);
#else
  throw std::logic_error("a CUDA device was found but the CUDA backend is not built");
#endif
}

std::unique_ptr<ShortlistScorer> MakeShortlistScorer(const DeviceSpec& spec, const kernels::Model<float>& mlp,
                                                     uint32_t k, kernels::OutputMath math,
                                                     const data::Dataset& dataset) {
  if (spec.kind == DeviceKind::kCpu) return MakeHostShortlistScorer(mlp, k, math);
#ifdef XMLT_HAVE_CUDA
  return MakeCudaShortlistScorer(spec, mlp, k, math, dataset);
#else
  (void)dataset;
  throw std::invalid_argument("device " + spec.id + ": this build has no CUDA backend");
#endif
}

}  // namespace xmlt::engine
