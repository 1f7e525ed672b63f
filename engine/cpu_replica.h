// A model replica on a CPU device: parameters (fp32, or bf16 with step_settings.bf16_weights),
// optional momentum buffer, and the batch and activation buffers, all allocated once for the
// largest batch it will see.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "data/dataset.h"
#include "data/sparse_batch.h"
#include "engine/step_settings.h"
#include "kernels/cpu/sparse_mlp.h"
#include "kernels/model.h"
#include "kernels/output_math.h"

namespace xmlt::engine {

class CpuReplica {
 public:
  // Throws std::invalid_argument for a momentum outside [0, 1), a negative or non-finite weight
  // decay, or a dropout outside [0, 1).
  CpuReplica(kernels::Model<float> model, uint32_t max_batch_rows, float momentum,
             kernels::OutputMath math = kernels::OutputMath::kFp32, StepSettings step_settings = {});

  // One SGD step on the given dataset rows; returns the batch's loss.
  kernels::cpu::LossResult TrainBatch(const data::Dataset& dataset, const uint64_t* rows,
                                      size_t count, float lr);

  // The shape and layout, and the fp32 parameters; with bf16 weights, params is empty and the
  // parameters are read and set through StreamParams and RestoreParams.
  const kernels::Model<float>& model() const { return model_; }
  kernels::Model<float>& model() { return model_; }
  bool WeightsInBf16() const { return !weights_bf16_.empty(); }
  uint16_t* Bf16Params() { return weights_bf16_.data(); }  // with bf16 weights: where a merge writes
  size_t NumParams() const { return model_.shape.NumParameters(); }
  // The parameters as fp32 values, handed to `sink` in pieces of at most 1 Mi values (bf16 weights
  // widened piece by piece, so no whole fp32 copy is made). RestoreParams copies the parameters'
  // count of values from `values` (float bytes, not necessarily aligned); bf16 weights round them
  // to nearest, which keeps values they held exactly. Throws std::invalid_argument for another count.
  void StreamParams(const std::function<void(const float* values, size_t count)>& sink) const;
  void RestoreParams(const void* values, size_t count);

  // The momentum buffer (with the first layer's Adagrad, its squares in the first layer's weights):
  // 0 values without momentum or Adagrad, else the parameters' count, in fp32 or, with
  // step_settings.bf16_optimizer_state, in bf16. Stream hands it to `sink` as floats, in pieces
  // of at most 1 Mi values (a bf16 state is widened piece by piece, so no whole fp32 copy is made).
  // Restore copies `count` values from `values` (float bytes, not necessarily aligned: a
  // checkpoint's mapping; a bf16 state rounds them to nearest, which keeps values a bf16 state
  // wrote exactly) for the parameters' count, or zeroes the buffer for count 0; throws
  // std::invalid_argument for any other count.
  size_t VelocitySize() const { return velocity_.params.size() + velocity_bf16_.size(); }
  void StreamVelocity(const std::function<void(const float* values, size_t count)>& sink) const;
  void RestoreVelocity(const void* values, size_t count);
  std::vector<float> SaveVelocity() const;  // the stream gathered: for tests and exchanges

  // The steps trained, from which the dropout masks and a bf16 state's or weights' rounding are
  // drawn: a checkpoint keeps it so that a resumed run draws what the uninterrupted run would have.
  // 8 bytes with dropout, a bf16 state or bf16 weights, else empty.
  std::vector<uint8_t> SaveStepCount() const;
  void RestoreStepCount(const std::vector<uint8_t>& state);

 private:
  kernels::Model<float> model_;  // without params when the weights are in bf16
  std::vector<uint16_t> weights_bf16_;  // the parameters, with bf16 weights
  kernels::Model<float> velocity_;  // empty unless momentum > 0 or the first layer's Adagrad
  std::vector<uint16_t> velocity_bf16_;  // in its place with a bf16 optimizer state
  float momentum_;
  StepSettings step_settings_;
  uint64_t steps_ = 0;
  bool KeepsStepCount() const {
    return step_settings_.dropout != 0 || !velocity_bf16_.empty() || !weights_bf16_.empty();
  }
  kernels::cpu::MlpWorkspace<float> workspace_;
  data::SparseBatch batch_;
};

}  // namespace xmlt::engine
