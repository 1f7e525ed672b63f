// Per-row top-k by a single scan with a small sorted buffer; see top_k.h.
#include "kernels/cpu/top_k.h"

#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>

#include <limits>
#include <vector>

namespace xmlt::kernels::cpu {
namespace {

// NaN compares false with everything: one in a row's first k entries would stop every later
// score from entering the list. It ranks as -infinity instead (top_k.h).
template <class T>
T OrderingScore(T s) {
  return s == s ? s : -std::numeric_limits<T>::infinity();
}

}  // namespace

template <class T>
void TopK(const T* scores, uint32_t rows, uint64_t num_labels, uint32_t k, uint32_t* labels,
          T* top_scores) {
  if (k == 0) return;
  tbb::parallel_for(tbb::blocked_range<uint32_t>(0, rows), [&](const tbb::blocked_range<uint32_t>& range) {
    std::vector<T> best(k);
    std::vector<uint32_t> best_label(k);
    for (uint32_t r = range.begin(); r < range.end(); ++r) {
      const T* row = scores + uint64_t(r) * num_labels;
      uint32_t filled = 0;
      for (uint64_t j = 0; j < num_labels; ++j) {
        const T s = OrderingScore(row[j]);
        // Strictly greater: an equal score met later has a higher id and loses the tie.
        if (filled == k && !(s > best[k - 1])) continue;
        uint32_t pos = filled < k ? filled++ : k - 1;
        while (pos > 0 && s > best[pos - 1]) {
          best[pos] = best[pos - 1];
          best_label[pos] = best_label[pos - 1];
          --pos;
        }
        best[pos] = s;
        best_label[pos] = uint32_t(j);
      }
      for (uint32_t i = 0; i < k; ++i) {
        labels[uint64_t(r) * k + i] = i < filled ? best_label[i] : std::numeric_limits<uint32_t>::max();
        if (top_scores != nullptr)
          top_scores[uint64_t(r) * k + i] = i < filled ? best[i] : -std::numeric_limits<T>::infinity();
      }
    }
  });
}

template void TopK<float>(const float*, uint32_t, uint64_t, uint32_t, uint32_t*, float*);
template void TopK<double>(const double*, uint32_t, uint64_t, uint32_t, uint32_t*, double*);

}  // namespace xmlt::kernels::cpu
