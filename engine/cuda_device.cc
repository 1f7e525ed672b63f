// A replica on a GPU through kernels::cuda::CudaMlp, which owns the stream, handles, parameters,
// momentum and batch buffers. When every device of a run is a GPU, merges run on the GPUs, on the
// replica where it is (ParamsOnGpu, merge/gpu/). Otherwise they run on a host mirror of the
// parameters: the device downloads its replica before a merge and uploads the merged state after
// it. The mirror is page-locked, so those copies run at the bus's speed without a staging copy;
// checkpoints and rollbacks go through it too. A checkpoint moves the optimizer state (the
// momentum buffer) through a page-locked chunk of at most kOptimizerStateChunkBytes, made for the
// copy: it is never held in host memory whole. Evaluation runs on
// the GPU too: the replica waits in the mirror while the model being scored takes its place.
// With bf16 weights (--weights bf16, under --math bf16) the replica and its mirror are bf16: the
// host merges read and write the mirror in place (HostBf16Params), as a CPU replica's, and a model
// being scored is rounded to nearest on its way in.
#include "engine/cuda_device.h"

#include <algorithm>
#include <stdexcept>
#include <vector>

#include <cstring>
#include <string>

#include "engine/bf16_pieces.h"
#include "kernels/context_lost.h"
#include "kernels/cuda/cuda_mlp.h"
#include "kernels/cuda/device_buffer.h"
#include "kernels/dropout_mask.h"

namespace xmlt::engine {
namespace {

// Sets a bf16 state's and weights' rounding noise apart from the dropout masks drawn from the same
// step key, and from each other: the CPU replica's salts, so that both round alike.
constexpr uint64_t kRoundingSalt = 0x5f0d2b7c9a4e3611ULL;
constexpr uint64_t kWeightsRoundingSalt = 0x3c6ef372fe94f82bULL;

kernels::cuda::StateFormat Format(bool bf16) {
  return bf16 ? kernels::cuda::StateFormat::kBf16 : kernels::cuda::StateFormat::kFp32;
}

// Page-locked memory registered with GPU `gpu`'s context, holding `params`: as they are, or (bf16)
// rounded to nearest; empty where the replica keeps the other storage.
kernels::cuda::PinnedBuffer<float> PinnedCopy(int gpu, const std::vector<float>& params, bool bf16) {
  kernels::cuda::DeviceGuard guard(gpu);
  kernels::cuda::PinnedBuffer<float> pinned(bf16 ? 0 : params.size());
  if (!bf16) std::copy(params.begin(), params.end(), pinned.data());
  return pinned;
}
kernels::cuda::PinnedBuffer<uint16_t> PinnedBf16Copy(int gpu, const std::vector<float>& params, bool bf16) {
  kernels::cuda::DeviceGuard guard(gpu);
  kernels::cuda::PinnedBuffer<uint16_t> pinned(bf16 ? params.size() : 0);
  if (bf16) RoundToNearestBf16(params.data(), params.size(), pinned.data());
  return pinned;
}

class CudaDevice final : public Device {
 public:
  CudaDevice(const DeviceSpec& spec, const kernels::Model<float>& initial, const DeviceLimits& limits,
             float momentum, kernels::OutputMath math, const StepSettings& step_settings,
             size_t state_chunk_bytes)
      : spec_(spec),
        momentum_(momentum),
        step_settings_(step_settings),
        limits_(limits),
        state_chunk_values_(std::max<size_t>(state_chunk_bytes / sizeof(float), 1)),
        num_params_(initial.params.size()),
        mlp_(spec.ordinal, initial.shape, limits.max_rows, limits.max_feature_nnz, limits.max_label_nnz,
             kernels::cuda::DenseMath(math), kernels::cuda::kMaxWarpTopK, Format(step_settings.bf16_optimizer_state),
             Format(step_settings.bf16_weights)),
        host_(PinnedCopy(spec.ordinal, initial.params, step_settings.bf16_weights)),
        host_bf16_(PinnedBf16Copy(spec.ordinal, initial.params, step_settings.bf16_weights)) {
    FinishMerge();
    WaitForCopies();
  }

  const DeviceSpec& spec() const override { return spec_; }

  kernels::cpu::LossResult TrainBatch(const data::Dataset& dataset, const uint64_t* rows, size_t count,
                                      float lr) override {
    data::GatherBatch(dataset, rows, count, &batch_);
    // The CPU replica's key for the same (seed, device, step): the same masks on either.
    kernels::cuda::CudaStepSettings step;
    step.dropout = step_settings_.dropout;
    step.dropout_key = kernels::DropoutMix(
        kernels::DropoutMix(kernels::DropoutMix(step_settings_.seed) ^ step_settings_.stream) ^ steps_);
    step.input_lr = lr * step_settings_.input_adagrad_ratio;
    // A bf16 state's noise, apart from the masks drawn from the same key.
    step.rounding_key = uint32_t(kernels::DropoutMix(step.dropout_key ^ kRoundingSalt));
    step.weights_rounding_key = uint32_t(kernels::DropoutMix(step.dropout_key ^ kWeightsRoundingSalt));
    const kernels::cpu::LossResult loss = mlp_.TrainBatch(batch_, lr, momentum_, step);
    ++steps_;
    return loss;
  }

  // The mirror's copies are queued (PrepareMerge, FinishMerge) and waited for only when the mirror
  // is read or written: the copies of several GPUs overlap.
  float* HostParams() override {
    WaitForCopies();
    return KeepsBf16Weights() ? nullptr : host_.data();
  }
  uint16_t* HostBf16Params() override {
    WaitForCopies();
    return KeepsBf16Weights() ? host_bf16_.data() : nullptr;
  }
  bool KeepsBf16Weights() const override { return step_settings_.bf16_weights; }
  void StreamParams(const ParamsSink& sink) override {
    if (!KeepsBf16Weights()) return Device::StreamParams(sink);
    StreamWidenedBf16(HostBf16Params(), num_params_, sink);
  }
  void LoadParams(const void* values, size_t count) override {
    if (!KeepsBf16Weights()) return Device::LoadParams(values, count);
    if (count != num_params_)
      throw std::invalid_argument("device " + spec_.id + ": " + std::to_string(count) + " parameters for " +
                                  std::to_string(num_params_));
    RoundToNearestBf16(values, count, HostBf16Params());
  }
  base::ReplicaParams ParamsOnGpu() override { return {mlp_.device_params(), mlp_.gpu()}; }
  bool Lost() override { return mlp_.ContextLost(); }
  size_t NumParams() const override { return num_params_; }
  void PrepareMerge() override {
    WaitForCopies();  // an upload still reading the mirror finishes first
    if (KeepsBf16Weights()) {
      mlp_.DownloadParamsBf16Async(host_bf16_.data(), num_params_);
    } else {
      mlp_.DownloadParamsAsync(host_.data(), num_params_);
    }
    copying_ = true;
  }
  void FinishMerge() override {
    WaitForCopies();
    if (KeepsBf16Weights()) {
      mlp_.UploadParamsBf16Async(host_bf16_.data(), num_params_);
    } else {
      mlp_.UploadParamsAsync(host_.data(), num_params_);
    }
    copying_ = true;
  }
  // The momentum buffer, whose first-layer weights hold Adagrad's squares when it is on.
  size_t OptimizerStateSize() const override { return KeepsOptimizerState() ? num_params_ : 0; }
  void StreamOptimizerState(const OptimizerStateSink& sink) override {
    const size_t n = OptimizerStateSize();
    if (n == 0) return;
    kernels::cuda::PinnedBuffer<float> chunk = StateChunk(n);
    for (size_t at = 0; at < n; at += chunk.size()) {
      const size_t count = std::min(chunk.size(), n - at);
      mlp_.DownloadMomentumRange(at, chunk.data(), count);
      sink(chunk.data(), count);
    }
  }
  // In chunks within the bounds the replica was built for (a test row beyond them alone is scored
  // on the CPU), with the model's ids clipped as the CPU evaluator does.
  EvaluationSums EvaluateRows(const kernels::Model<float>& model, const data::Dataset& test, const uint64_t* rows,
                              size_t count) override {
    if (model.params.size() != num_params_)
      throw std::invalid_argument(spec_.id + ": the model to evaluate is not the replica's shape");
    PrepareMerge();  // the replica into the mirror
    WaitForCopies();
    mlp_.UploadParams(model.params.data(), model.params.size());
    EvaluationSums sums;
    try {
      sums = EvaluateRowsInChunks(model, test, rows, count, limits_.max_rows, limits_.max_feature_nnz,
                                  limits_.max_label_nnz,
                                  [&](const data::SparseBatch& batch, uint32_t k, uint32_t* top, double* loss_sum,
                                      uint32_t* labeled) { mlp_.Predict(batch, k, top, loss_sum, labeled); });
    } catch (...) {
      try {
        FinishMerge();  // the replica back, if the GPU still takes it
        WaitForCopies();
      } catch (...) {
      }
      throw;  // the first error, which says what went wrong
    }
    FinishMerge();
    WaitForCopies();
    return sums;
  }
  // The values are copied into the chunk as bytes (a checkpoint's mapping need not align them),
  // and uploaded from there.
  void RestoreOptimizerState(const void* values, size_t count) override {
    if (count == 0) return mlp_.ZeroMomentum();
    if (!KeepsOptimizerState())
      throw std::invalid_argument(spec_.id + ": momentum state given without momentum");
    if (count != num_params_)
      throw std::invalid_argument(spec_.id + ": momentum state of " + std::to_string(count) + " values for " +
                                  std::to_string(num_params_) + " parameters");
    kernels::cuda::PinnedBuffer<float> chunk = StateChunk(count);
    const char* bytes = static_cast<const char*>(values);
    for (size_t at = 0; at < count; at += chunk.size()) {
      const size_t part = std::min(chunk.size(), count - at);
      std::memcpy(chunk.data(), bytes + at * sizeof(float), part * sizeof(float));
      mlp_.UploadMomentumRange(at, chunk.data(), part);
    }
  }
  // With dropout or bf16 state or weights, the step count the masks and the rounding noise are drawn from
  // (as the CPU replica's).
  std::vector<uint8_t> SaveExtraState() override {
    if (!KeepsStepCount()) return {};
    std::vector<uint8_t> state(sizeof steps_);
    std::memcpy(state.data(), &steps_, sizeof steps_);
    return state;
  }
  void RestoreExtraState(const std::vector<uint8_t>& state) override {
    steps_ = 0;
    if (state.empty()) return;
    if (state.size() != sizeof steps_ || !KeepsStepCount())
      throw std::invalid_argument(spec_.id + ": step count state of " + std::to_string(state.size()) +
                                  " bytes for a replica " +
                                  (KeepsStepCount() ? "that keeps 8" : "without dropout or a bf16 state or weights"));
    std::memcpy(&steps_, state.data(), sizeof steps_);
  }

 private:
  bool KeepsOptimizerState() const { return momentum_ != 0 || step_settings_.input_adagrad_ratio > 0; }
  bool KeepsStepCount() const {
    return step_settings_.dropout != 0 || step_settings_.bf16_optimizer_state || step_settings_.bf16_weights;
  }
  void WaitForCopies() {
    if (!copying_) return;
    mlp_.WaitForCopies();
    copying_ = false;
  }
  // Page-locked memory for one chunk of an optimizer state of `values` values: the whole state when
  // it is smaller than a chunk.
  kernels::cuda::PinnedBuffer<float> StateChunk(size_t values) const {
    kernels::cuda::DeviceGuard guard(spec_.ordinal);
    return kernels::cuda::PinnedBuffer<float>(std::min(values, state_chunk_values_));
  }

  DeviceSpec spec_;
  float momentum_;
  StepSettings step_settings_;
  uint64_t steps_ = 0;  // since the run began: the dropout masks' counter
  DeviceLimits limits_;
  size_t state_chunk_values_;  // the most of the optimizer state a chunk holds
  size_t num_params_;
  kernels::cuda::CudaMlp mlp_;
  kernels::cuda::PinnedBuffer<float> host_;  // the mirror the merges work on (fp32 weights)
  kernels::cuda::PinnedBuffer<uint16_t> host_bf16_;  // the same for bf16 weights
  bool copying_ = false;                      // a copy between host_ and the replica may be running
  data::SparseBatch batch_;
};

}  // namespace

std::unique_ptr<Device> MakeCudaDevice(const DeviceSpec& spec, const kernels::Model<float>& initial,
                                       const DeviceLimits& limits, float local_momentum, kernels::OutputMath math,
                                       const StepSettings& step_settings, size_t state_chunk_bytes) {
  if (step_settings.weight_decay != 0)
    throw std::invalid_argument("device " + spec.id + ": the CUDA backend has no weight decay");
  // The runtime's message names the failed call, not the GPU: a card out of memory for its replica's
  // buffers, or lost while they are made, is named here. A lost context stays a ContextLost.
  try {
    return std::make_unique<CudaDevice>(spec, initial, limits, local_momentum, math, step_settings,
                                        state_chunk_bytes);
  } catch (const kernels::ContextLost& e) {
    throw kernels::ContextLost("device " + spec.id + ": cannot set up: " + e.what());
  } catch (const std::runtime_error& e) {
    throw std::runtime_error("device " + spec.id + ": cannot set up: " + e.what());
  }
}

}  // namespace xmlt::engine
