// The k highest scores of each row, best first; ties go to the lower label id so results are
// deterministic.
#pragma once

#include <cstdint>

namespace xmlt::kernels::cpu {

// scores: rows x num_labels. Writes rows x k label ids (and scores when non-null); when k exceeds
// num_labels the remaining slots get label UINT32_MAX.
template <class T>
void TopK(const T* scores, uint32_t rows, uint64_t num_labels, uint32_t k, uint32_t* labels,
          T* top_scores);

}  // namespace xmlt::kernels::cpu
