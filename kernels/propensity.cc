// Inverse label propensities; see propensity.h.
#include "kernels/propensity.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

namespace xmlt::kernels {

std::vector<float> InversePropensities(const data::CsrMatrix& train_labels, uint64_t num_labels,
                                       const PropensityModel& model) {
  if (!(model.a > 0) || !(model.b > 0) || !std::isfinite(model.a) || !std::isfinite(model.b))
    throw std::invalid_argument("propensity model: A and B must be finite and > 0, got A=" +
                                std::to_string(model.a) + " B=" + std::to_string(model.b));
  if (train_labels.num_rows < 2)
    throw std::invalid_argument("propensity model: needs at least 2 training rows (C = (ln N - 1)(B + 1)^A)");
  std::vector<uint64_t> counts(std::max<uint64_t>(num_labels, train_labels.num_cols), 0);
  for (uint64_t e = 0; e < train_labels.nnz(); ++e) ++counts[train_labels.col_idx[e]];
  const double c = (std::log(double(train_labels.num_rows)) - 1.0) * std::pow(model.b + 1.0, model.a);
  std::vector<float> weights(counts.size());
  for (size_t l = 0; l < counts.size(); ++l)
    weights[l] = float(1.0 + c * std::pow(double(counts[l]) + model.b, -model.a));
  return weights;
}

}  // namespace xmlt::kernels
