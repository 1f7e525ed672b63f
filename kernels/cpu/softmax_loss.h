// Row-wise softmax with cross-entropy against the uniform distribution over a row's labels:
// loss_r = -(1/|Y_r|) * sum_{y in Y_r} log softmax(z_r)[y]. Numerically stable (max subtracted).
#pragma once

#include <cstdint>

#include "data/sparse_batch.h"

namespace xmlt::kernels::cpu {

struct LossResult {
  double loss_sum = 0;        // summed over rows with labels
  uint32_t labeled_rows = 0;  // rows with at least one label
};

// Computes the loss of `logits` (rows x num_labels, row-major) and overwrites them with the
// gradient of the batch-mean loss: (softmax - target) / labeled_rows. Rows without labels get a
// zero gradient and do not count.
template <class T>
LossResult SoftmaxCrossEntropyBackward(T* logits, const data::SparseBatch& batch,
                                       uint64_t num_labels);

// The loss alone, logits untouched (evaluation).
template <class T>
LossResult SoftmaxCrossEntropy(const T* logits, const data::SparseBatch& batch,
                               uint64_t num_labels);

}  // namespace xmlt::kernels::cpu
