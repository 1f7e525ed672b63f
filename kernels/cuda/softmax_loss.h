// Softmax cross-entropy on the GPU, mirroring kernels/cpu/softmax_loss.h: the loss against the
// uniform distribution over a row's labels and, fused into the same kernel, its gradient.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "data/sparse_batch.h"

namespace xmlt::kernels::cuda {

// Rows with at least one label: the host counts them while staging a batch, since the gradient's
// scale 1/labeled must be known before the kernel runs.
uint32_t CountLabeledRows(const data::SparseBatch& batch);

// logits: rows x num_labels (device, row-major); label_ptr (rows + 1) and label_idx are the
// batch's label CSR in device memory. Overwrites the logits with (softmax - target) / labeled_rows
// (zero for rows without labels) and writes the summed loss of the labeled rows to *loss_sum
// (device). row_loss is device scratch of at least `rows` doubles; the sum over it runs in a fixed
// order, so a batch always gives the same loss. Asynchronous on `stream`.
void SoftmaxCrossEntropyBackward(float* logits, uint32_t rows, uint64_t num_labels,
                                 const uint64_t* label_ptr, const uint32_t* label_idx,
                                 uint32_t labeled_rows, double* row_loss, double* loss_sum,
                                 cudaStream_t stream);

// The loss alone, logits untouched (evaluation).
void SoftmaxCrossEntropy(const float* logits, uint32_t rows, uint64_t num_labels,
                         const uint64_t* label_ptr, const uint32_t* label_idx, double* row_loss,
                         double* loss_sum, cudaStream_t stream);

}  // namespace xmlt::kernels::cuda
