// A model replica on a CPU device: parameters, optional momentum buffer, and the batch and
// activation buffers, all allocated once for the largest batch it will see.
#pragma once

#include <cstdint>

#include "data/dataset.h"
#include "data/sparse_batch.h"
#include "kernels/cpu/sparse_mlp.h"
#include "kernels/model.h"
#include "kernels/output_math.h"

namespace xmlt::engine {

class CpuReplica {
 public:
  CpuReplica(kernels::Model<float> model, uint32_t max_batch_rows, float momentum,
             kernels::OutputMath math = kernels::OutputMath::kFp32);

  // One SGD step on the given dataset rows; returns the batch's loss.
  kernels::cpu::LossResult TrainBatch(const data::Dataset& dataset, const uint64_t* rows,
                                      size_t count, float lr);

  const kernels::Model<float>& model() const { return model_; }
  kernels::Model<float>& model() { return model_; }

  // The momentum buffer: empty without momentum. Restore takes a vector of the parameters' size,
  // or an empty one to zero the buffer; throws std::invalid_argument for any other size.
  const std::vector<float>& velocity() const { return velocity_.params; }
  void RestoreVelocity(const std::vector<float>& velocity);

 private:
  kernels::Model<float> model_;
  kernels::Model<float> velocity_;  // empty unless momentum > 0
  float momentum_;
  kernels::cpu::MlpWorkspace<float> workspace_;
  data::SparseBatch batch_;
};

}  // namespace xmlt::engine
