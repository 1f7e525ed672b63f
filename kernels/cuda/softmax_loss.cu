// Fused softmax cross-entropy: a block per row finds the max and the sum of exponentials in one
// pass (online rescaling), then writes the gradient in a second; see softmax_loss.h.
#include "kernels/cuda/softmax_loss.h"

#include <cub/block/block_reduce.cuh>

#include <cmath>

#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/launch.h"

namespace xmlt::kernels::cuda {
namespace {

constexpr int kThreads = 256;

// A running softmax normalizer: sum of exp(z - max) over the values seen, with their max.
struct MaxSum {
  float max;
  float sum;
};

// Rescales the smaller-max side to the larger max; an empty side (sum 0) is the identity, which
// also keeps -inf - -inf (NaN) out when a thread saw no values.
struct MergeMaxSum {
  __device__ MaxSum operator()(const MaxSum& a, const MaxSum& b) const {
    if (a.sum == 0.0f) return b;
    if (b.sum == 0.0f) return a;
    const float max = fmaxf(a.max, b.max);
    return {max, a.sum * expf(a.max - max) + b.sum * expf(b.max - max)};
  }
};

template <bool kBackward>
__global__ void __launch_bounds__(kThreads)
    SoftmaxLossKernel(float* logits, uint64_t num_labels, const uint64_t* label_ptr,
                      const uint32_t* label_idx, float scale, double* row_loss) {
  using PairReduce = cub::BlockReduce<MaxSum, kThreads>;
  using SumReduce = cub::BlockReduce<double, kThreads>;
  __shared__ union {
    typename PairReduce::TempStorage pair;
    typename SumReduce::TempStorage sum;
  } temp;
  __shared__ MaxSum stats;

  const uint32_t r = blockIdx.x;
  float* z = logits + uint64_t(r) * num_labels;
  const uint64_t begin = label_ptr[r], end = label_ptr[r + 1];
  if (begin == end) {  // no labels: no loss, zero gradient (the whole block takes this branch)
    if (kBackward)
      for (uint64_t j = threadIdx.x; j < num_labels; j += kThreads) z[j] = 0.0f;
    if (threadIdx.x == 0) row_loss[r] = 0.0;
    return;
  }

  MaxSum local{-INFINITY, 0.0f};
  for (uint64_t j = threadIdx.x; j < num_labels; j += kThreads) {
    const float x = z[j];
    if (x > local.max) {
      local.sum = local.sum * expf(local.max - x) + 1.0f;
      local.max = x;
    } else {
      local.sum += expf(x - local.max);
    }
  }
  const MaxSum total = PairReduce(temp.pair).Reduce(local, MergeMaxSum());
  if (threadIdx.x == 0) stats = total;
  __syncthreads();  // publishes stats, and frees temp for the second reduction
  const float max = stats.max, sum = stats.sum;

  // As on the CPU: the loss is log sum exp(z - max) - mean over labels of (z_y - max), in double.
  double target = 0.0;
  for (uint64_t i = begin + threadIdx.x; i < end; i += kThreads)
    target += double(z[label_idx[i]] - max);
  target = SumReduce(temp.sum).Sum(target);
  const uint32_t count = uint32_t(end - begin);
  if (threadIdx.x == 0) row_loss[r] = log(double(sum)) - target / count;
  if (!kBackward) return;

  __syncthreads();  // every thread has read its label logits before any is overwritten
  const float factor = scale / sum;
  for (uint64_t j = threadIdx.x; j < num_labels; j += kThreads) z[j] = expf(z[j] - max) * factor;
  __syncthreads();  // the label entries below may have been written by other threads
  const float target_grad = scale / float(count);
  for (uint64_t i = begin + threadIdx.x; i < end; i += kThreads) z[label_idx[i]] -= target_grad;
}

// One block, fixed strides and a fixed reduction tree: the same rows always sum the same way.
__global__ void __launch_bounds__(kThreads) SumRowsKernel(const double* row_loss, uint32_t rows,
                                                          double* out) {
  using Reduce = cub::BlockReduce<double, kThreads>;
  __shared__ typename Reduce::TempStorage temp;
  double acc = 0.0;
  for (uint32_t r = threadIdx.x; r < rows; r += kThreads) acc += row_loss[r];
  acc = Reduce(temp).Sum(acc);
  if (threadIdx.x == 0) *out = acc;
}

template <bool kBackward>
void Launch(float* logits, uint32_t rows, uint64_t num_labels, const uint64_t* label_ptr,
            const uint32_t* label_idx, float scale, double* row_loss, double* loss_sum,
            cudaStream_t stream) {
  if (rows > 0) {
    XMLT_LAUNCH(SoftmaxLossKernel<kBackward>, rows, kThreads, 0, stream)(logits, num_labels, label_ptr, label_idx, scale, row_loss);
    XMLT_CUDA_CHECK_LAUNCH();
  }
  XMLT_LAUNCH(SumRowsKernel, 1, kThreads, 0, stream)(row_loss, rows, loss_sum);
  XMLT_CUDA_CHECK_LAUNCH();
}

}  // namespace

uint32_t CountLabeledRows(const data::SparseBatch& batch) {
  uint32_t labeled = 0;
  for (uint32_t r = 0; r < batch.num_rows; ++r) labeled += batch.NumLabels(r) > 0;
  return labeled;
}

void SoftmaxCrossEntropyBackward(float* logits, uint32_t rows, uint64_t num_labels,
                                 const uint64_t* label_ptr, const uint32_t* label_idx,
                                 uint32_t labeled_rows, double* row_loss, double* loss_sum,
                                 cudaStream_t stream) {
  const float scale = labeled_rows > 0 ? 1.0f / float(labeled_rows) : 0.0f;
  Launch<true>(logits, rows, num_labels, label_ptr, label_idx, scale, row_loss, loss_sum, stream);
}

void SoftmaxCrossEntropy(const float* logits, uint32_t rows, uint64_t num_labels,
                         const uint64_t* label_ptr, const uint32_t* label_idx, double* row_loss,
                         double* loss_sum, cudaStream_t stream) {
  // The forward-only instantiation never writes through the pointer.
  Launch<false>(const_cast<float*>(logits), rows, num_labels, label_ptr, label_idx, 0.0f, row_loss,
                loss_sum, stream);
}

}  // namespace xmlt::kernels::cuda
