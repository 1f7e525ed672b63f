// Top-k with a warp per row: each lane keeps a sorted list of the best k of its strided share of
// the row (the CPU's insertion scan), then k rounds of a warp arg-max over the lists' heads merge
// them; see top_k.h.
#include "kernels/cuda/top_k.h"

#include <cmath>
#include <stdexcept>
#include <string>

#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/launch.h"

namespace xmlt::kernels::cuda {
namespace {

constexpr uint32_t kWarp = 32;
constexpr uint32_t kWarpsPerBlock = 4;
constexpr unsigned kFullMask = 0xffffffffu;

// The total order of the result: valid before invalid (empty list), higher score first, then the
// lower label id.
__device__ bool Precedes(bool valid_a, float score_a, uint32_t id_a, bool valid_b, float score_b,
                         uint32_t id_b) {
  if (valid_a != valid_b) return valid_a;
  if (!valid_a) return false;
  if (score_a != score_b) return score_a > score_b;
  return id_a < id_b;
}

// Shared memory per warp: k scores then k ids per lane, stored [slot][lane] so that the lanes of a
// warp touching the same slot hit 32 different banks.
__global__ void __launch_bounds__(kWarpsPerBlock* kWarp)
    TopKKernel(const float* scores, uint32_t rows, uint64_t num_labels, uint32_t k,
               uint32_t* labels, float* top_scores) {
  XMLT_DYNAMIC_SHARED(unsigned char, shared);
  const uint32_t warp = threadIdx.x / kWarp, lane = threadIdx.x % kWarp;
  float* best = reinterpret_cast<float*>(shared) + size_t(warp) * k * kWarp;
  uint32_t* best_id =
      reinterpret_cast<uint32_t*>(shared + size_t(kWarpsPerBlock) * k * kWarp * sizeof(float)) +
      size_t(warp) * k * kWarp;
  const uint64_t r = uint64_t(blockIdx.x) * kWarpsPerBlock + warp;
  if (r >= rows) return;  // whole warps only: the shuffles below need all 32 lanes

  // Lane `lane` scans labels lane, lane + 32, ... in increasing order, so its list (strictly
  // greater to enter or move up) keeps the lower id first among equal scores, as the CPU's does.
  const float* row = scores + r * num_labels;
  uint32_t filled = 0;
  for (uint64_t j = lane; j < num_labels; j += kWarp) {
    const float s = isnan(row[j]) ? -INFINITY : row[j];  // as on the CPU: NaN ranks as -infinity
    if (filled == k && !(s > best[(k - 1) * kWarp + lane])) continue;
    uint32_t pos = filled < k ? filled++ : k - 1;
    while (pos > 0 && s > best[(pos - 1) * kWarp + lane]) {
      best[pos * kWarp + lane] = best[(pos - 1) * kWarp + lane];
      best_id[pos * kWarp + lane] = best_id[(pos - 1) * kWarp + lane];
      --pos;
    }
    best[pos * kWarp + lane] = s;
    best_id[pos * kWarp + lane] = uint32_t(j);
  }

  // Each round the best head over all lanes is the next result; its owner (label j lives in lane
  // j % 32) pops it. The butterfly leaves the same winner in every lane (a total order).
  uint32_t head = 0;
  for (uint32_t i = 0; i < k; ++i) {
    bool valid = head < filled;
    float s = valid ? best[head * kWarp + lane] : -INFINITY;
    uint32_t id = valid ? best_id[head * kWarp + lane] : UINT32_MAX;
    for (uint32_t offset = kWarp / 2; offset > 0; offset /= 2) {
      const bool other_valid = __shfl_xor_sync(kFullMask, int(valid), offset) != 0;
      const float other_s = __shfl_xor_sync(kFullMask, s, offset);
      const uint32_t other_id = __shfl_xor_sync(kFullMask, id, offset);
      if (Precedes(other_valid, other_s, other_id, valid, s, id)) {
        valid = other_valid;
        s = other_s;
        id = other_id;
      }
    }
    if (valid && id % kWarp == lane) ++head;
    if (lane == 0) {
      labels[r * k + i] = valid ? id : UINT32_MAX;
      if (top_scores != nullptr) top_scores[r * k + i] = valid ? s : -INFINITY;
    }
  }
}

}  // namespace

void TopK(const float* scores, uint32_t rows, uint64_t num_labels, uint32_t k, uint32_t* labels,
          float* top_scores, cudaStream_t stream) {
  if (k > kMaxTopK)
    throw std::invalid_argument("TopK: k = " + std::to_string(k) + " exceeds " +
                                std::to_string(kMaxTopK));
  if (k == 0 || rows == 0) return;
  const uint32_t blocks = (rows + kWarpsPerBlock - 1) / kWarpsPerBlock;
  const size_t shared = size_t(kWarpsPerBlock) * k * kWarp * (sizeof(float) + sizeof(uint32_t));
  XMLT_LAUNCH(TopKKernel, blocks, kWarpsPerBlock * kWarp, shared, stream)(scores, rows, num_labels, k,
                                                                 labels, top_scores);
  XMLT_CUDA_CHECK_LAUNCH();
}

}  // namespace xmlt::kernels::cuda
