// Per-row top-k on the GPU, mirroring kernels/cpu/top_k.h: best first, ties to the lower label id,
// a NaN score ranked (and reported) as -infinity.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "kernels/cuda/top_k_limits.h"

namespace xmlt::kernels::cuda {

// scores: rows x num_labels (device). Writes rows x k label ids (and scores when top_scores is
// non-null) to device memory; slots beyond num_labels get UINT32_MAX and -inf. k <= kMaxTopK
// (throws std::invalid_argument otherwise). Asynchronous on `stream`.
void TopK(const float* scores, uint32_t rows, uint64_t num_labels, uint32_t k, uint32_t* labels,
          float* top_scores, cudaStream_t stream);

}  // namespace xmlt::kernels::cuda
