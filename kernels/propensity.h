// Label propensities for the propensity-scored metrics (kernels/top_k_metrics.h), the model of
// Jain, Prabhu and Varma (2016) as the extreme classification repository computes them: with N
// training rows and N_l of them carrying label l, p_l = 1 / (1 + C (N_l + B)^-A), C = (ln N - 1)
// (B + 1)^A. A and B are fitted per dataset family: 0.55 and 1.5 in general, 0.6 and 2.6 for
// Amazon, 0.5 and 0.4 for Wikipedia.
#pragma once

#include <cstdint>
#include <vector>

#include "data/csr_matrix.h"

namespace xmlt::kernels {

struct PropensityModel {
  double a = 0.55, b = 1.5;
};

// w_l = 1 / p_l for labels 0..num_labels-1 (at least the training labels' count; a label the
// training rows never carry has N_l = 0, the largest weight). Throws std::invalid_argument for a
// non-positive or non-finite A or B, or a training set of fewer than 2 rows.
std::vector<float> InversePropensities(const data::CsrMatrix& train_labels, uint64_t num_labels,
                                       const PropensityModel& model = {});

}  // namespace xmlt::kernels
