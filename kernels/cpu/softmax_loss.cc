// Stable softmax cross-entropy and its gradient; see softmax_loss.h.
#include "kernels/cpu/softmax_loss.h"

#include <tbb/parallel_reduce.h>
#include <tbb/partitioner.h>
#include <tbb/blocked_range.h>

#include <algorithm>
#include <cmath>

#include "kernels/cpu/vector_ops.h"

namespace xmlt::kernels::cpu {
namespace {

// Losses are summed in a fixed tree over fixed row ranges, so that a seed gives the same loss
// whatever the threads did.
constexpr uint32_t kRowsPerTask = 8;

// The loops over a row go to the vector kernels of the CPU's ISA (vector_ops.h).
template <class T>
T RowMax(const T* z, uint64_t n) {
  return vector_ops::Max(z, n);
}

template <class T>
struct RowStats {
  T max;
  double log_sum_exp;  // log sum exp(z - max)
};

template <class T>
RowStats<T> StatsOf(const T* z, uint64_t n) {
  const T max = RowMax(z, n);
  // Accumulated in T (vectorizes); the exponentials are <= 1 so float precision holds up well.
  const T sum = vector_ops::ExpSum(z, max, n);
  return {max, std::log(double(sum))};
}

template <class T>
double RowLoss(const T* z, const data::SparseBatch& batch, uint32_t r, const RowStats<T>& s) {
  double target_sum = 0;
  for (uint64_t i = batch.label_ptr[r]; i < batch.label_ptr[r + 1]; ++i)
    target_sum += double(z[batch.label_idx[i]] - s.max);
  return s.log_sum_exp - target_sum / batch.NumLabels(r);
}

uint32_t CountLabeled(const data::SparseBatch& batch) {
  uint32_t labeled = 0;
  for (uint32_t r = 0; r < batch.num_rows; ++r) labeled += batch.NumLabels(r) > 0;
  return labeled;
}

}  // namespace

template <class T>
LossResult SoftmaxCrossEntropyBackward(T* logits, const data::SparseBatch& batch,
                                       uint64_t num_labels) {
  const uint32_t labeled = CountLabeled(batch);
  const T scale = labeled > 0 ? T(1) / T(labeled) : T(0);
  const double loss = tbb::parallel_deterministic_reduce(
      tbb::blocked_range<uint32_t>(0, batch.num_rows, kRowsPerTask), 0.0,
      [&](const tbb::blocked_range<uint32_t>& range, double acc) {
        for (uint32_t r = range.begin(); r < range.end(); ++r) {
          T* z = logits + uint64_t(r) * num_labels;
          const uint32_t count = batch.NumLabels(r);
          if (count == 0) {
            std::fill(z, z + num_labels, T(0));
            continue;
          }
          // One exponential per label: exp(z - max) is stored in place while summing, then
          // scaled into p / labeled; the label logits are read for the loss before that.
          const T max = RowMax(z, num_labels);
          double target_sum = 0;
          for (uint64_t i = batch.label_ptr[r]; i < batch.label_ptr[r + 1]; ++i)
            target_sum += double(z[batch.label_idx[i]] - max);
          const T sum = vector_ops::ExpInPlace(z, max, num_labels);
          acc += std::log(double(sum)) - target_sum / count;
          vector_ops::Scale(z, z, scale / sum, num_labels);
          const T target = scale / T(count);
          for (uint64_t i = batch.label_ptr[r]; i < batch.label_ptr[r + 1]; ++i)
            z[batch.label_idx[i]] -= target;
        }
        return acc;
      },
      std::plus<double>(), tbb::simple_partitioner());
  return {loss, labeled};
}

template <class T>
LossResult SoftmaxCrossEntropy(const T* logits, const data::SparseBatch& batch,
                               uint64_t num_labels) {
  const double loss = tbb::parallel_deterministic_reduce(
      tbb::blocked_range<uint32_t>(0, batch.num_rows, kRowsPerTask), 0.0,
      [&](const tbb::blocked_range<uint32_t>& range, double acc) {
        for (uint32_t r = range.begin(); r < range.end(); ++r) {
          if (batch.NumLabels(r) == 0) continue;
          const T* z = logits + uint64_t(r) * num_labels;
          acc += RowLoss(z, batch, r, StatsOf(z, num_labels));
        }
        return acc;
      },
      std::plus<double>(), tbb::simple_partitioner());
  return {loss, CountLabeled(batch)};
}

template LossResult SoftmaxCrossEntropyBackward<float>(float*, const data::SparseBatch&, uint64_t);
template LossResult SoftmaxCrossEntropyBackward<double>(double*, const data::SparseBatch&, uint64_t);
template LossResult SoftmaxCrossEntropy<float>(const float*, const data::SparseBatch&, uint64_t);
template LossResult SoftmaxCrossEntropy<double>(const double*, const data::SparseBatch&, uint64_t);

}  // namespace xmlt::kernels::cpu
