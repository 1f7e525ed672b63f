// Algorithm 1 of the Adaptive SGD paper (batch size scaling with the linear learning-rate rule),
// transcribed line by line, plus the defaults of its section 5.1 and the rounding of a batch.
#include "scheduler/batch_size_scaling.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <sstream>
#include <stdexcept>
#include <string>

namespace xmlt::scheduler {
namespace {

std::string Describe(double b_min, double b_max, double beta) {
  std::ostringstream os;
  os << "b_min=" << b_min << ", b_max=" << b_max << ", beta=" << beta;
  return os.str();
}

}  // namespace

BatchScalingBounds MakeBounds(double b_max, double b_min, double beta) {
  if (!std::isfinite(b_max) || b_max <= 0) {
    throw std::invalid_argument("batch size scaling: b_max must be a finite number > 0 (" +
                                Describe(b_min, b_max, beta) + ")");
  }
  // NaN is not "<= 0", so it reaches the checks below instead of silently becoming a default.
  if (b_min <= 0) b_min = b_max / 8;
  if (beta <= 0) beta = b_min / 2;
  if (!std::isfinite(b_min) || !(b_min > 0) || b_min > b_max) {
    throw std::invalid_argument("batch size scaling: need 0 < b_min <= b_max (" +
                                Describe(b_min, b_max, beta) + ")");
  }
  if (!std::isfinite(beta) || !(beta >= 0)) {
    throw std::invalid_argument("batch size scaling: beta must be a finite number >= 0 (" +
                                Describe(b_min, b_max, beta) + ")");
  }
  BatchScalingBounds bounds;
  bounds.b_min = b_min;
  bounds.b_max = b_max;
  bounds.beta = beta;
  return bounds;
}

void ScaleBatchSizes(const std::vector<uint64_t>& updates, const BatchScalingBounds& bounds,
                     std::vector<BatchSizeAndLr>* devices) {
  if (devices == nullptr) throw std::invalid_argument("ScaleBatchSizes: devices is null");
  if (updates.size() != devices->size()) {
    throw std::invalid_argument("ScaleBatchSizes: " + std::to_string(updates.size()) +
                                " update counts for " + std::to_string(devices->size()) +
                                " devices");
  }
  if (devices->empty()) return;
  for (size_t i = 0; i < devices->size(); ++i) {
    const double b = (*devices)[i].batch;
    // The learning rate is scaled by new/old batch, which needs a positive old batch.
    if (!std::isfinite(b) || b <= 0) {
      throw std::invalid_argument("ScaleBatchSizes: device " + std::to_string(i) +
                                  " has batch size " + std::to_string(b) + ", need > 0");
    }
  }

  // Line 1. Sums below 2^53 are exact in double; then u_i == mean exactly when the counts are
  // equal, and otherwise |u_i - mean| >= 1/n, far above rounding, so the comparisons are exact.
  double sum = 0;
  for (uint64_t u : updates) sum += static_cast<double>(u);
  const double mean = sum / static_cast<double>(updates.size());

  const double beta = bounds.beta;
  for (size_t i = 0; i < devices->size(); ++i) {
    BatchSizeAndLr& d = (*devices)[i];
    const double u = static_cast<double>(updates[i]);
    const double b = d.batch;
    if (u > mean && b + beta * (u - mean) <= bounds.b_max) {  // lines 3-5
      const double grown = b + beta * (u - mean);
      d.lr = d.lr * grown / b;
      d.batch = grown;
    } else if (u < mean && b - beta * (mean - u) >= bounds.b_min) {  // lines 6-8
      const double shrunk = b - beta * (mean - u);
      d.lr = d.lr * shrunk / b;
      d.batch = shrunk;
    }
    // Otherwise (line 9) the device keeps its batch and learning rate: a step that would leave
    // [b_min, b_max] is skipped, not clamped.
  }
}

uint32_t RowsForBatch(double b) {
  if (!(b >= 1)) return 1;  // also NaN
  constexpr double kMaxRows = static_cast<double>(std::numeric_limits<uint32_t>::max());
  if (b >= kMaxRows) return std::numeric_limits<uint32_t>::max();
  // b - floor(b) is exact in double, so a half is recognised exactly (floor(b + 0.5) can round
  // in the addition).
  const double whole = std::floor(b);
  const double rows = (b - whole >= 0.5) ? whole + 1 : whole;
  return static_cast<uint32_t>(std::min(rows, kMaxRows));
}

}  // namespace xmlt::scheduler
