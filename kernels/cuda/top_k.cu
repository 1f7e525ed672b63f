// Top-k for up to 32 with a warp per row: each lane keeps a sorted list of the best k of its strided
// share of the row (the CPU's insertion scan), then k rounds of a warp arg-max over the lists'
// heads merge them. Beyond 32, a block per row selects by radix; see top_k.h.
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


// ---- A block per row, for k up to kMaxTopK ----

constexpr uint32_t kBlockThreads = 256;
constexpr uint32_t kRadixBits = 8;
constexpr uint32_t kBins = 1u << kRadixBits;

// A score's place in the result's order as an unsigned key: a larger key is a higher score. NaN
// ranks as -infinity and -0 as +0, so that keys are equal exactly where the CPU sees a tie.
__device__ uint32_t OrderKey(float s) {
  if (isnan(s)) s = -INFINITY;
  if (s == 0.0f) s = 0.0f;
  const uint32_t bits = __float_as_uint(s);
  return (bits & 0x80000000u) != 0 ? ~bits : bits | 0x80000000u;
}

// Every real key is above 0 (-infinity's is 0x007fffff): 0 marks an empty place, sorted last.
__device__ bool KeyPrecedes(uint32_t key_a, uint32_t id_a, uint32_t key_b, uint32_t id_b) {
  if (key_a != key_b) return key_a > key_b;
  return id_a < id_b;
}

// Thread t's contiguous share of [0, n): the shares in thread order are the row in label order.
__device__ void ThreadShare(uint64_t n, uint32_t t, uint64_t* begin, uint64_t* end) {
  *begin = n * t / kBlockThreads;
  *end = n * (t + 1) / kBlockThreads;
}

__global__ void __launch_bounds__(kBlockThreads)
    TopKBlockKernel(const float* scores, uint64_t num_labels, uint32_t k, uint32_t* labels, float* top_scores) {
  __shared__ uint32_t histogram[kBins];
  __shared__ uint32_t threshold, need;  // the k-th best key, and how many of its ties to take
  __shared__ uint32_t above_at[kBlockThreads], tie_at[kBlockThreads];
  __shared__ uint32_t key[kMaxTopK], id[kMaxTopK];
  const uint32_t t = threadIdx.x;
  const uint64_t r = blockIdx.x;
  const float* row = scores + r * num_labels;
  const uint32_t taken = uint32_t(num_labels < k ? num_labels : k);
  uint32_t places = 1;  // a power of two for the sort
  while (places < taken) places *= 2;
  for (uint32_t i = t; i < places; i += kBlockThreads) {
    key[i] = 0;
    id[i] = UINT32_MAX;
  }
  __syncthreads();

  if (num_labels <= k) {
    for (uint64_t j = t; j < num_labels; j += kBlockThreads) {
      key[j] = OrderKey(row[j]);
      id[j] = uint32_t(j);
    }
  } else {
    // The k-th best key, a byte at a time from the top: each pass counts the keys that share the
    // bytes found so far by their next byte, and takes the byte where the count from the top
    // reaches the places still to fill.
    if (t == 0) {
      threshold = 0;
      need = k;
    }
    uint32_t known = 0;  // the mask of the bytes found
    for (int shift = 32 - int(kRadixBits); shift >= 0; shift -= int(kRadixBits)) {
      for (uint32_t b = t; b < kBins; b += kBlockThreads) histogram[b] = 0;
      __syncthreads();
      const uint32_t prefix = threshold;
      for (uint64_t j = t; j < num_labels; j += kBlockThreads) {
        const uint32_t x = OrderKey(row[j]);
        if ((x & known) == prefix) atomicAdd(&histogram[(x >> shift) & (kBins - 1)], 1u);
      }
      __syncthreads();
      if (t == 0) {
        uint32_t left = need, digit = kBins - 1;
        while (histogram[digit] < left) left -= histogram[digit--];
        threshold = prefix | (digit << shift);
        need = left;
      }
      known |= (kBins - 1) << shift;
      __syncthreads();
    }
    // The keys above the threshold, then as many of its ties as are needed, lowest ids first: each
    // thread counts its share, the counts are summed in thread order (label order), and each
    // thread writes its labels at its offsets.
    const uint32_t cut = threshold, ties_needed = need;
    uint64_t begin, end;
    ThreadShare(num_labels, t, &begin, &end);
    uint32_t above = 0, ties = 0;
    for (uint64_t j = begin; j < end; ++j) {
      const uint32_t x = OrderKey(row[j]);
      above += x > cut;
      ties += x == cut;
    }
    above_at[t] = above;
    tie_at[t] = ties;
    __syncthreads();
    if (t == 0) {
      uint32_t above_sum = 0, tie_sum = 0;
      for (uint32_t i = 0; i < kBlockThreads; ++i) {
        const uint32_t a = above_at[i], b = tie_at[i];
        above_at[i] = above_sum;
        tie_at[i] = tie_sum;
        above_sum += a;
        tie_sum += b;
      }
    }
    __syncthreads();
    uint32_t next_above = above_at[t], next_tie = tie_at[t];
    const uint32_t first_tie = taken - ties_needed;
    for (uint64_t j = begin; j < end; ++j) {
      const uint32_t x = OrderKey(row[j]);
      if (x > cut) {
        key[next_above] = x;
        id[next_above++] = uint32_t(j);
      } else if (x == cut && next_tie < ties_needed) {
        key[first_tie + next_tie] = x;
        id[first_tie + next_tie++] = uint32_t(j);
      }
    }
  }
  __syncthreads();

  // A bitonic sort of the places into the result's order.
  for (uint32_t size = 2; size <= places; size *= 2) {
    for (uint32_t stride = size / 2; stride > 0; stride /= 2) {
      for (uint32_t i = t; i < places; i += kBlockThreads) {
        const uint32_t j = i ^ stride;
        if (j <= i) continue;
        const bool first_half = (i & size) == 0;
        const bool j_first = KeyPrecedes(key[j], id[j], key[i], id[i]);
        if (first_half == j_first) {
          const uint32_t swap_key = key[i], swap_id = id[i];
          key[i] = key[j];
          id[i] = id[j];
          key[j] = swap_key;
          id[j] = swap_id;
        }
      }
      __syncthreads();
    }
  }
  for (uint32_t i = t; i < k; i += kBlockThreads) {
    const bool valid = i < taken;
    labels[r * k + i] = valid ? id[i] : UINT32_MAX;
    if (top_scores != nullptr) {
      const float s = valid ? row[id[i]] : -INFINITY;
      top_scores[r * k + i] = isnan(s) ? -INFINITY : s;
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
  if (k > kMaxWarpTopK) {
    XMLT_LAUNCH(TopKBlockKernel, rows, kBlockThreads, 0, stream)(scores, num_labels, k, labels, top_scores);
    XMLT_CUDA_CHECK_LAUNCH();
    return;
  }
  const uint32_t blocks = (rows + kWarpsPerBlock - 1) / kWarpsPerBlock;
  const size_t shared = size_t(kWarpsPerBlock) * k * kWarp * (sizeof(float) + sizeof(uint32_t));
  XMLT_LAUNCH(TopKKernel, blocks, kWarpsPerBlock * kWarp, shared, stream)(scores, rows, num_labels, k,
                                                                 labels, top_scores);
  XMLT_CUDA_CHECK_LAUNCH();
}

}  // namespace xmlt::kernels::cuda
