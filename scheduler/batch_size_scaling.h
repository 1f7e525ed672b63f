// Algorithm 1 of the Adaptive SGD paper: after each mega-batch, devices that performed more
// updates than the average get larger batches, slower ones smaller, within [b_min, b_max]; the
// learning rate follows by the linear scaling rule. Sizes are kept as real numbers (the algorithm's
// state) and rounded only when a batch is cut (RowsForBatch).
#pragma once

#include <cstdint>
#include <vector>

namespace xmlt::scheduler {

struct BatchScalingBounds {
  double b_min = 0, b_max = 0;  // allowed batch sizes
  double beta = 0;              // rows per update of deviation from the mean
};

// Defaults of the paper: b_max = the initial batch, b_min = b_max / 8, beta = b_min / 2; a value
// <= 0 passed for b_min or beta means "use the default". Throws std::invalid_argument unless
// 0 < b_min <= b_max and beta >= 0.
BatchScalingBounds MakeBounds(double b_max, double b_min = 0, double beta = 0);

struct BatchSizeAndLr {
  double batch = 0;  // b_i
  double lr = 0;     // lr_i
};

// One application of Algorithm 1 given u_i (updates since the last merge), exactly as written:
// a change that would leave [b_min, b_max] is not applied at all (not clamped).
void ScaleBatchSizes(const std::vector<uint64_t>& updates, const BatchScalingBounds& bounds,
                     std::vector<BatchSizeAndLr>* devices);

// Rows in a batch cut for a device whose size is b: b rounded to the nearest integer (halves up),
// at least 1.
uint32_t RowsForBatch(double b);

}  // namespace xmlt::scheduler
