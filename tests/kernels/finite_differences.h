// The reference the CPU gradients are checked against: the batch's mean loss by the forward pass
// alone, and its central difference in one parameter.
#pragma once

#include <cstddef>

#include "kernels/cpu/softmax_loss.h"
#include "kernels/cpu/sparse_mlp.h"

namespace xmlt::testing {

inline double MeanLoss(const kernels::Model<double>& model, const data::SparseBatch& batch,
                       kernels::cpu::MlpWorkspace<double>* ws) {
  kernels::cpu::Forward(model, batch, ws);
  const kernels::cpu::LossResult loss =
      kernels::cpu::SoftmaxCrossEntropy(ws->logits.data(), batch, model.shape.num_labels);
  return loss.loss_sum / loss.labeled_rows;
}

// (loss(p_i + h) - loss(p_i - h)) / 2h; parameter i is left as it was.
inline double NumericDerivative(kernels::Model<double>* model, const data::SparseBatch& batch,
                                kernels::cpu::MlpWorkspace<double>* ws, size_t i, double h) {
  const double saved = model->params[i];
  model->params[i] = saved + h;
  const double plus = MeanLoss(*model, batch, ws);
  model->params[i] = saved - h;
  const double minus = MeanLoss(*model, batch, ws);
  model->params[i] = saved;
  return (plus - minus) / (2 * h);
}

}  // namespace xmlt::testing
