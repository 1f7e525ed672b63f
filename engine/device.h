// A training device: it owns one model replica (parameters, optimizer state, batch buffers
// allocated once for the largest batch) and trains batches on it. The CPU backend implements it
// now; the CUDA backend plugs in behind the same interface through MakeDevice.
#pragma once

#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "base/replica_params.h"
#include "data/dataset.h"
#include "engine/device_spec.h"
#include "engine/evaluator.h"
#include "engine/sampled_output.h"
#include "engine/step_settings.h"
#include "kernels/cpu/softmax_loss.h"
#include "kernels/model.h"
#include "kernels/output_math.h"

namespace xmlt::engine {

// The most a device whose optimizer state is not in host memory (a GPU) holds of it in host
// memory at a time while a checkpoint writes or reads it: 64 MiB.
constexpr size_t kOptimizerStateChunkBytes = size_t(64) << 20;

class Device {
 public:
  virtual ~Device() = default;
  virtual const DeviceSpec& spec() const = 0;

  // One local SGD step on the given rows of `dataset`; returns the batch's loss.
  virtual kernels::cpu::LossResult TrainBatch(const data::Dataset& dataset, const uint64_t* rows,
                                              size_t count, float lr) = 0;

  // The replica's parameters in host memory, where the CPU collectives read and write them.
  // Devices with their own memory mirror them: PrepareMerge copies the replica into the mirror,
  // FinishMerge copies the mirror (the merged state) back; on the CPU both are no-ops.
  // Null for a replica that keeps its weights in bf16 (KeepsBf16Weights; a GPU's mirror is then bf16): its
  // weights are HostBf16Params instead, which the host merges of several devices read and write in
  // place; StreamParams and LoadParams reach them too.
  virtual float* HostParams() = 0;
  virtual uint16_t* HostBf16Params() { return nullptr; }
  virtual size_t NumParams() const = 0;
  // The replica's parameters as fp32 values, in consecutive pieces, in order (each read during its
  // call only), and set from `count` fp32 values at `values` (bytes that need not be aligned: a
  // checkpoint's mapping; throws std::invalid_argument for a count other than NumParams). Through
  // HostParams by default; a replica with bf16 weights widens them a piece at a time and rounds
  // what it is given to nearest, which keeps values it held exactly. A device with its own memory
  // loads into its mirror: FinishMerge then copies it in, as after a write to HostParams.
  using ParamsSink = std::function<void(const float* values, size_t count)>;
  virtual bool KeepsBf16Weights() const { return false; }  // true: HostParams is null
  virtual void StreamParams(const ParamsSink& sink) { sink(HostParams(), NumParams()); }
  virtual void LoadParams(const void* values, size_t count) {
    if (count != NumParams())
      throw std::invalid_argument("device " + spec().id + ": " + std::to_string(count) + " parameters for " +
                                  std::to_string(NumParams()));
    if (count != 0) std::memcpy(HostParams(), values, count * sizeof(float));
  }
  virtual void PrepareMerge() {}
  virtual void FinishMerge() {}
  // The replica's parameters in GPU memory, for merges that run on the GPUs (merge/gpu/): the
  // GPU's ordinal and the pointer, which stays the same for the device's life; gpu -1 for a
  // replica in host memory. Such a merge needs neither PrepareMerge nor FinishMerge.
  virtual base::ReplicaParams ParamsOnGpu() { return {}; }
  // Whether the device can no longer run anything (a GPU whose context a sticky error took): asked
  // when a merge failed, to learn which device it lost.
  virtual bool Lost() { return false; }
  // A mirror of another rank's replica frees its copy while nothing needs it; HostParams fills it
  // in again (with zeros, for the owner's next share). Other devices keep their replicas.
  virtual void ReleaseMirror() {}

  // The optimizer state beyond the parameters (the local momentum, laid out like the parameters,
  // with the first layer's Adagrad its squares in the first layer's weights; a sampled device's
  // squares alone): its size in values, 0 when the device keeps none.
  virtual size_t OptimizerStateSize() const = 0;
  // Hands the state to `sink` in consecutive pieces, in order, from where it lives (each piece is
  // read during its call only): a checkpoint writes it without a whole copy. A device whose state
  // is not in host memory (a GPU) downloads it through a buffer of at most
  // kOptimizerStateChunkBytes.
  using OptimizerStateSink = std::function<void(const float* values, size_t count)>;
  virtual void StreamOptimizerState(const OptimizerStateSink& sink) = 0;
  // Restores the state from `count` values stored at `values`, as float bytes that need not be
  // aligned (a checkpoint's mapping: they are copied as bytes, to a GPU through the same bounded
  // buffer); count 0 zeroes it (after a rollback the old velocity would carry the divergence on).
  // Throws std::invalid_argument for a size the device does not keep.
  virtual void RestoreOptimizerState(const void* values, size_t count) = 0;
  // The same through a vector, for exchanges and tests: a whole copy of the state.
  std::vector<float> SaveOptimizerState() {
    std::vector<float> state;
    state.reserve(OptimizerStateSize());
    StreamOptimizerState([&](const float* values, size_t count) { state.insert(state.end(), values, values + count); });
    return state;
  }
  void RestoreOptimizerState(const std::vector<float>& state) { RestoreOptimizerState(state.data(), state.size()); }
  // Any other state a resumed run needs to go on exactly where this one is (a sampled device's LSH
  // tables): empty for most devices. Restored after the parameters and FinishMerge; a device that
  // keeps none refuses a non-empty state.
  virtual std::vector<uint8_t> SaveExtraState() { return {}; }
  virtual void RestoreExtraState(const std::vector<uint8_t>& state) {
    if (!state.empty()) throw std::invalid_argument("device " + spec().id + " keeps no state beyond its parameters");
  }

  // Scores `model` (the global model, not the replica) on the given rows of `test`: the device's
  // share of an evaluation. Runs the CPU evaluator here; a device with its own memory may run it
  // there instead.
  virtual EvaluationSums EvaluateRows(const kernels::Model<float>& model, const data::Dataset& test,
                                      const uint64_t* rows, size_t count) {
    return engine::EvaluateRows(model, test, rows, count);
  }
};

// The largest batch a device must hold, so it can allocate everything once.
struct DeviceLimits {
  uint32_t max_rows = 0;
  uint64_t max_feature_nnz = 0;  // feature entries in any batch of max_rows rows
  uint64_t max_label_nnz = 0;    // label entries in any batch of max_rows rows
};

// Bounds for batches of up to max_rows rows of `dataset` (the sums of its largest rows).
DeviceLimits LimitsFor(const data::Dataset& dataset, uint32_t max_rows);

// Builds the device named by `spec` holding a copy of `initial`, its output layer computing in
// `math`, or, on a CPU with `sampled.enabled`, SLIDE's sampled output layer
// (engine/sampled_cpu_device.h), its step set by `step_settings` (weight decay on the
// CPU's dense step only). Throws std::invalid_argument for a device this build or machine cannot
// provide (e.g. cuda:0 without a CUDA backend or GPU, tf32 on a CPU, or a weight decay on a GPU
// or a sampled device) and std::runtime_error for bf16 on a CPU without native bf16.
std::unique_ptr<Device> MakeDevice(const DeviceSpec& spec, const kernels::Model<float>& initial,
                                   const DeviceLimits& limits, float local_momentum,
                                   kernels::OutputMath math = kernels::OutputMath::kFp32,
                                   const SampledOutputOptions& sampled = {},
                                   const StepSettings& step_settings = {});

}  // namespace xmlt::engine
