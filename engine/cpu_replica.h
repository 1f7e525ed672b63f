// A model replica on a CPU device: parameters, optional momentum buffer, and the batch and
// activation buffers, all allocated once for the largest batch it will see.
#pragma once

#include <cstdint>

#include "data/dataset.h"
#include "data/sparse_batch.h"
#include "engine/step_regularization.h"
#include "kernels/cpu/sparse_mlp.h"
#include "kernels/model.h"
#include "kernels/output_math.h"

namespace xmlt::engine {

class CpuReplica {
 public:
  // Throws std::invalid_argument for a momentum outside [0, 1), a negative or non-finite weight
  // decay, or a dropout outside [0, 1).
  CpuReplica(kernels::Model<float> model, uint32_t max_batch_rows, float momentum,
             kernels::OutputMath math = kernels::OutputMath::kFp32, StepRegularization regularization = {});

  // One SGD step on the given dataset rows; returns the batch's loss.
  kernels::cpu::LossResult TrainBatch(const data::Dataset& dataset, const uint64_t* rows,
                                      size_t count, float lr);

  const kernels::Model<float>& model() const { return model_; }
  kernels::Model<float>& model() { return model_; }

  // The momentum buffer (with the first layer's Adagrad, its squares in the first layer's weights):
  // empty without momentum or Adagrad. Restore copies `count` values from `values` (float bytes,
  // not necessarily aligned: a checkpoint's mapping) for the parameters' count, or zeroes the
  // buffer for count 0; throws std::invalid_argument for any other count.
  const std::vector<float>& velocity() const { return velocity_.params; }
  void RestoreVelocity(const void* values, size_t count);

  // The steps trained, from which the dropout masks are drawn: a checkpoint keeps it so that a
  // resumed run draws the masks the uninterrupted run would have. 8 bytes with dropout, else empty.
  std::vector<uint8_t> SaveStepCount() const;
  void RestoreStepCount(const std::vector<uint8_t>& state);

 private:
  kernels::Model<float> model_;
  kernels::Model<float> velocity_;  // empty unless momentum > 0 or the first layer's Adagrad
  float momentum_;
  StepRegularization regularization_;
  uint64_t steps_ = 0;
  kernels::cpu::MlpWorkspace<float> workspace_;
  data::SparseBatch batch_;
};

}  // namespace xmlt::engine
