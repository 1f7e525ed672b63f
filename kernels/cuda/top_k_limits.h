// How deep the GPU's per-row top-k goes (top_k.h), without the CUDA headers, so that host code
// such as cuda_mlp.h can size its buffers by it.
#pragma once

#include <cstdint>

namespace xmlt::kernels::cuda {

// Up to this k a warp ranks a row (a sorted list per lane, then a warp merge): the evaluation's
// depth. Beyond it, up to kMaxTopK (the ranker's shortlists, kernels/ranker/shortlist_ranker.h), a
// block ranks a row: a radix select of the k-th best score over the row's bits, the labels above
// it and the lowest-id ties gathered in label order, and a bitonic sort of those k.
constexpr uint32_t kMaxWarpTopK = 32;
constexpr uint32_t kMaxTopK = 1024;

}  // namespace xmlt::kernels::cuda
