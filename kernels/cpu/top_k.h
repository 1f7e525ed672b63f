// The k highest scores of each row, best first; ties go to the lower label id so results are
// deterministic. A NaN score (a diverged model's) ranks as -infinity, and is reported as such, so
// the order stays total and a NaN never takes a place from a number.
#pragma once

#include <cstdint>

namespace xmlt::kernels::cpu {

// scores: rows x num_labels. Writes rows x k label ids (and scores when non-null); when k exceeds
// num_labels the remaining slots get label UINT32_MAX.
template <class T>
void TopK(const T* scores, uint32_t rows, uint64_t num_labels, uint32_t k, uint32_t* labels,
          T* top_scores);

}  // namespace xmlt::kernels::cpu
